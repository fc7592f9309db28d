import { CholeskyDecomposition, Matrix } from 'ml-matrix';

/**
 * Sufficient statistics of a set of feature frames (count, sums, sums of products), from which the
 * full-covariance Gaussian that fits them follows; two sets combine by adding their statistics.
 */
export class GaussianStats {
  count = 0;
  readonly sum: Float64Array;
  /** Upper triangle (row i, column j >= i) of the sums of products, row-major. */
  readonly products: Float64Array;
  private cachedLogDet: { ridge: number; value: number } | undefined;

  constructor(readonly dimension: number) {
    this.sum = new Float64Array(dimension);
    this.products = new Float64Array(dimension * dimension);
  }

  /** Adds the frame that starts at `offset` in `values`. */
  add(values: ArrayLike<number>, offset: number): void {
    const d = this.dimension;
    this.count += 1;
    this.cachedLogDet = undefined;
    for (let i = 0; i < d; i++) {
      const x = values[offset + i] ?? 0;
      this.sum[i] = (this.sum[i] ?? 0) + x;
      for (let j = i; j < d; j++) {
        this.products[i * d + j] = (this.products[i * d + j] ?? 0) + x * (values[offset + j] ?? 0);
      }
    }
  }

  plus(other: GaussianStats): GaussianStats {
    const total = new GaussianStats(this.dimension);
    total.count = this.count + other.count;
    for (let i = 0; i < this.sum.length; i++) total.sum[i] = (this.sum[i] ?? 0) + (other.sum[i] ?? 0);
    for (let i = 0; i < this.products.length; i++) {
      total.products[i] = (this.products[i] ?? 0) + (other.products[i] ?? 0);
    }
    return total;
  }

  /**
   * Log-determinant of the maximum-likelihood covariance (Cholesky factorisation). `ridge` is added
   * to the diagonal: a few frames cannot fill a full covariance, and with standardised features a small
   * constant keeps it defined without changing what many frames say.
   */
  logDetCovariance(ridge: number): number {
    if (this.cachedLogDet?.ridge === ridge) return this.cachedLogDet.value;
    const d = this.dimension;
    const n = Math.max(1, this.count);
    const covariance = new Matrix(d, d);
    for (let i = 0; i < d; i++) {
      for (let j = i; j < d; j++) {
        const value =
          (this.products[i * d + j] ?? 0) / n -
          ((this.sum[i] ?? 0) / n) * ((this.sum[j] ?? 0) / n) +
          (i === j ? ridge : 0);
        covariance.set(i, j, value);
        covariance.set(j, i, value);
      }
    }
    const lower = new CholeskyDecomposition(covariance).lowerTriangularMatrix;
    let value = 0;
    for (let i = 0; i < d; i++) value += 2 * Math.log(Math.max(lower.get(i, i), Number.MIN_VALUE));
    this.cachedLogDet = { ridge, value };
    return value;
  }
}

/** Free parameters of a full-covariance Gaussian: the mean and the upper triangle of the covariance. */
export function gaussianParameters(dimension: number): number {
  return dimension + (dimension * (dimension + 1)) / 2;
}

/**
 * ΔBIC of two sets of frames (Chen and Gopalakrishnan, 1998): how much better one full-covariance
 * Gaussian each explains them than one for both, less the price of the second model's parameters
 * weighted by `penaltyWeight`. Positive says two sources (two voices), negative one.
 */
export function deltaBic(a: GaussianStats, b: GaussianStats, penaltyWeight: number, ridge: number): number {
  const both = a.plus(b);
  const fit =
    0.5 *
    (both.count * both.logDetCovariance(ridge) -
      a.count * a.logDetCovariance(ridge) -
      b.count * b.logDetCovariance(ridge));
  return fit - 0.5 * penaltyWeight * gaussianParameters(a.dimension) * Math.log(both.count);
}
