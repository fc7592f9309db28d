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

  /**
   * The same statistics as the mean and the centred sums of products (upper triangle, row by row): raw sums
   * of products are large and nearly cancel when the covariance is taken, centred ones keep their precision
   * in few digits.
   */
  moments(): { mean: Float64Array; scatter: Float64Array } {
    const d = this.dimension;
    const n = Math.max(1, this.count);
    const mean = this.sum.map((sum) => sum / n);
    const scatter = new Float64Array(triangleSize(d));
    let k = 0;
    for (let i = 0; i < d; i++) {
      for (let j = i; j < d; j++) {
        scatter[k++] = (this.products[i * d + j] ?? 0) - (this.sum[i] ?? 0) * (mean[j] ?? 0);
      }
    }
    return { mean, scatter };
  }

  static fromMoments(count: number, mean: ArrayLike<number>, scatter: ArrayLike<number>): GaussianStats {
    const d = mean.length;
    const stats = new GaussianStats(d);
    stats.count = count;
    let k = 0;
    for (let i = 0; i < d; i++) {
      stats.sum[i] = count * (mean[i] ?? 0);
      for (let j = i; j < d; j++) {
        stats.products[i * d + j] = (scatter[k++] ?? 0) + count * (mean[i] ?? 0) * (mean[j] ?? 0);
      }
    }
    return stats;
  }

  /** The statistics of the same frames after each coefficient x_k becomes (x_k − shift_k) · scale_k. */
  standardised(shift: ArrayLike<number>, scale: ArrayLike<number>): GaussianStats {
    const d = this.dimension;
    const n = this.count;
    const result = new GaussianStats(d);
    result.count = n;
    for (let i = 0; i < d; i++) {
      const si = this.sum[i] ?? 0;
      const ai = shift[i] ?? 0;
      result.sum[i] = (scale[i] ?? 1) * (si - n * ai);
      for (let j = i; j < d; j++) {
        const aj = shift[j] ?? 0;
        const centred = (this.products[i * d + j] ?? 0) - ai * (this.sum[j] ?? 0) - aj * si + n * ai * aj;
        result.products[i * d + j] = (scale[i] ?? 1) * (scale[j] ?? 1) * centred;
      }
    }
    return result;
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
    const value = logDetOfUnion(this, undefined, ridge);
    this.cachedLogDet = { ridge, value };
    return value;
  }
}

/** The lower triangle of the covariance being factorised, overwritten by its Cholesky factor in place. */
let scratch = new Float64Array(0);

/**
 * Log-determinant of the maximum-likelihood covariance of the frames of `a` and `b` together (of `a`
 * alone without `b`), `ridge` added to the diagonal, from its Cholesky factor L: 2 Σ log L_jj.
 * Cholesky–Banachiewicz in the order of ml-matrix's `CholeskyDecomposition`, whose figures it gives to
 * the last bit (test/unit/gaussian.test.ts), written out and without an allocation because clustering
 * computes one per pair of clusters, about n² for n segments, and a library matrix object per call
 * cost twenty times the arithmetic.
 */
function logDetOfUnion(a: GaussianStats, b: GaussianStats | undefined, ridge: number): number {
  const d = a.dimension;
  if (scratch.length < d * d) scratch = new Float64Array(d * d);
  const lower = scratch;
  const n = Math.max(1, a.count + (b?.count ?? 0));
  for (let j = 0; j < d; j++) {
    const sumJ = (a.sum[j] ?? 0) + (b?.sum[j] ?? 0);
    for (let k = 0; k <= j; k++) {
      const sumK = (a.sum[k] ?? 0) + (b?.sum[k] ?? 0);
      const products = (a.products[k * d + j] ?? 0) + (b?.products[k * d + j] ?? 0);
      lower[j * d + k] = products / n - (sumK / n) * (sumJ / n) + (j === k ? ridge : 0);
    }
  }
  let value = 0;
  for (let j = 0; j < d; j++) {
    let squares = 0;
    for (let k = 0; k < j; k++) {
      let s = 0;
      for (let i = 0; i < k; i++) s += (lower[k * d + i] ?? 0) * (lower[j * d + i] ?? 0);
      s = ((lower[j * d + k] ?? 0) - s) / (lower[k * d + k] ?? 0);
      lower[j * d + k] = s;
      squares = squares + s * s;
    }
    // Not positive definite (a degenerate set of frames): the factor's diagonal stops at 0.
    const diagonal = Math.sqrt(Math.max((lower[j * d + j] ?? 0) - squares, 0));
    lower[j * d + j] = diagonal;
    value += 2 * Math.log(Math.max(diagonal, Number.MIN_VALUE));
  }
  return value;
}

/** Entries of the upper triangle (with the diagonal) of a square matrix of this dimension. */
export function triangleSize(dimension: number): number {
  return (dimension * (dimension + 1)) / 2;
}

/** Free parameters of a full-covariance Gaussian: the mean and the upper triangle of the covariance. */
export function gaussianParameters(dimension: number): number {
  return dimension + triangleSize(dimension);
}

/**
 * ΔBIC of two sets of frames (Chen and Gopalakrishnan, 1998): how much better one full-covariance
 * Gaussian each explains them than one for both, less the price of the second model's parameters
 * weighted by `penaltyWeight`. Positive says two sources (two voices), negative one.
 */
export function deltaBic(a: GaussianStats, b: GaussianStats, penaltyWeight: number, ridge: number): number {
  const count = a.count + b.count;
  const fit =
    0.5 *
    (count * logDetOfUnion(a, b, ridge) -
      a.count * a.logDetCovariance(ridge) -
      b.count * b.logDetCovariance(ridge));
  return fit - 0.5 * penaltyWeight * gaussianParameters(a.dimension) * Math.log(count);
}
