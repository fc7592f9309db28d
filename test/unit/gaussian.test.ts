import fc from 'fast-check';
import { CholeskyDecomposition, Matrix } from 'ml-matrix';
import { describe, expect, it } from 'vitest';
import { deltaBic, GaussianStats } from '#speech/gaussian';

const DIMENSION = 19;

/** Frames of DIMENSION numbers, as many as asked (fewer than the dimension leave a singular covariance). */
const frames = (minLength: number) =>
  fc.array(
    fc.array(fc.double({ min: -50, max: 50, noNaN: true }), { minLength: DIMENSION, maxLength: DIMENSION }),
    {
      minLength,
      maxLength: 60,
    },
  );

function statsOf(list: number[][]): GaussianStats {
  const stats = new GaussianStats(DIMENSION);
  for (const frame of list) stats.add(frame, 0);
  return stats;
}

/** The log-determinant as ml-matrix computes it: the library the hand-written factorisation replaced. */
function libraryLogDet(stats: GaussianStats, ridge: number): number {
  const d = stats.dimension;
  const n = Math.max(1, stats.count);
  const covariance = new Matrix(d, d);
  for (let i = 0; i < d; i++) {
    for (let j = i; j < d; j++) {
      const value =
        (stats.products[i * d + j] ?? 0) / n -
        ((stats.sum[i] ?? 0) / n) * ((stats.sum[j] ?? 0) / n) +
        (i === j ? ridge : 0);
      covariance.set(i, j, value);
      covariance.set(j, i, value);
    }
  }
  const lower = new CholeskyDecomposition(covariance).lowerTriangularMatrix;
  let value = 0;
  for (let i = 0; i < d; i++) value += 2 * Math.log(Math.max(lower.get(i, i), Number.MIN_VALUE));
  return value;
}

describe('GaussianStats', () => {
  it('gives the log-determinant of ml-matrix’s Cholesky factorisation to the last bit, for one set and for two together', () => {
    fc.assert(
      fc.property(frames(1), frames(1), fc.constantFrom(0, 0.01, 1), (a, b, ridge) => {
        const one = statsOf(a);
        const other = statsOf(b);
        expect(one.logDetCovariance(ridge)).toBe(libraryLogDet(one, ridge));
        // ΔBIC factorises the union without building it: the same figure as through `plus`.
        const both = one.plus(other);
        const fit =
          0.5 *
          (both.count * libraryLogDet(both, ridge) -
            one.count * libraryLogDet(one, ridge) -
            other.count * libraryLogDet(other, ridge));
        const penalty = 0.5 * 2 * (DIMENSION + (DIMENSION * (DIMENSION + 1)) / 2) * Math.log(both.count);
        expect(deltaBic(one, other, 2, ridge)).toBe(fit - penalty);
      }),
      { numRuns: 60 },
    );
  });

  it('keeps its statistics through centred moments, and standardises them as it would the frames', () => {
    fc.assert(
      fc.property(
        frames(2),
        fc.array(fc.double({ min: -5, max: 5, noNaN: true }), { minLength: DIMENSION, maxLength: DIMENSION }),
        fc.array(fc.double({ min: 0.1, max: 3, noNaN: true }), {
          minLength: DIMENSION,
          maxLength: DIMENSION,
        }),
        (list, shift, scale) => {
          const stats = statsOf(list);
          const { mean, scatter } = stats.moments();
          const back = GaussianStats.fromMoments(stats.count, mean, scatter);
          // Equal but for rounding, relative to the largest figure (centring trades a few bits).
          const close = (actual: Float64Array, expected: Float64Array) => {
            const size = Math.max(1, ...expected.map(Math.abs));
            expected.forEach((value, index) => {
              expect(Math.abs((actual[index] ?? 0) - value)).toBeLessThan(1e-9 * size);
            });
          };
          expect(back.count).toBe(stats.count);
          close(back.sum, stats.sum);
          close(back.products, stats.products);
          const changed = statsOf(
            list.map((frame) => frame.map((x, k) => (x - (shift[k] ?? 0)) * (scale[k] ?? 1))),
          );
          const standardised = stats.standardised(shift, scale);
          close(standardised.sum, changed.sum);
          close(standardised.products, changed.products);
        },
      ),
      { numRuns: 25 },
    );
  });
});
