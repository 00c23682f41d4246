"""Pure statistics for the reporter (reference: spec/noise-model.md, statistics.md of the project).

Every function here is pure: numpy arrays (or per-task counts) in, frozen pydantic result models out.
Nothing reads files, the clock or global random state; Monte Carlo uses an explicit seed that the result
records.

Conventions
-----------
* The unit of randomisation is the **task**. Attempts of one task are resamples (a cluster), never
  independent evidence. Every standard error below clusters on task.
* Attempt outcome codes: ``1`` success, ``0`` model failure (incl. ``timeout``), ``-1`` infra error.
* The headline score is the **as-run** score: equal task weights, infra errors counted as failures.
* Small-sample correction: clustered SEs use the factor ``G/(G-1)`` (G = number of tasks) and nothing
  else. That is statsmodels ``cov_type='cluster'`` with ``use_correction=False`` times ``sqrt(G/(G-1))``
  (statsmodels' default correction additionally multiplies by ``(N-1)/(N-K)``). For the as-run mean this
  is exactly the one-sample t standard error of the task means, ``sd(m, ddof=1)/sqrt(n)``; for a paired
  difference it is ``sd(d, ddof=1)/sqrt(n)``.
* All rates are fractions in [0, 1].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy import special
from scipy import stats as sps

SUCCESS, FAILURE, INFRA_ERROR = 1, 0, -1

#: z_{alpha/2} + z_beta for alpha = 0.05 two-sided and 80 % power (statistics.md 1.5).
MDE_FACTOR_05_80 = 2.8015852

#: Largest lattice support the exact sign-flip distribution is computed on (else Monte Carlo).
EXACT_SIGNFLIP_MAX_SUPPORT = 20_000_000
#: Exact enumeration is used directly (2**m patterns) up to this many non-zero differences.
ENUMERATE_MAX = 20
DEFAULT_SEED = 20240611
DEFAULT_RESAMPLES = 100_000


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=False)


Interval = tuple[float, float]


# ----------------------------------------------------------------------------------------------------------
# Per-task aggregation
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskTable:
    """Per-task counts of one run: the only input the task-level statistics need (O(n))."""

    task_ids: tuple[str, ...]
    attempts: np.ndarray  # k_i
    successes: np.ndarray  # S_i
    infra_errors: np.ndarray  # E_i

    def __post_init__(self) -> None:
        n = len(self.task_ids)
        for name in ("attempts", "successes", "infra_errors"):
            arr = getattr(self, name)
            if arr.shape != (n,):
                raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
        if np.any(self.attempts <= 0):
            raise ValueError("every task needs at least one attempt")
        if np.any(self.successes + self.infra_errors > self.attempts) or np.any(self.successes < 0):
            raise ValueError("successes + infra errors exceed attempts")

    @classmethod
    def from_codes(
        cls, task_index: np.ndarray, task_ids: tuple[str, ...] | list[str], codes: np.ndarray
    ) -> TaskTable:
        """Aggregate attempt rows: ``task_index[j]`` indexes ``task_ids``; ``codes[j]`` in {1, 0, -1}."""
        n = len(task_ids)
        task_index = np.asarray(task_index, dtype=np.int64)
        codes = np.asarray(codes, dtype=np.int8)
        k = np.bincount(task_index, minlength=n)
        s = np.bincount(task_index, weights=(codes == SUCCESS), minlength=n).astype(np.int64)
        e = np.bincount(task_index, weights=(codes == INFRA_ERROR), minlength=n).astype(np.int64)
        keep = k > 0
        ids = tuple(t for t, kk in zip(task_ids, keep) if kk)
        return cls(ids, k[keep].astype(np.int64), s[keep], e[keep])

    @classmethod
    def from_rows(cls, task_ids: list[str] | np.ndarray, codes: np.ndarray) -> TaskTable:
        uniq, inv = np.unique(np.asarray(task_ids, dtype=object).astype(str), return_inverse=True)
        return cls.from_codes(inv, tuple(str(u) for u in uniq), codes)

    @property
    def n_tasks(self) -> int:
        return len(self.task_ids)

    @property
    def n_trials(self) -> int:
        return int(self.attempts.sum())

    @property
    def as_run(self) -> np.ndarray:
        """m_i = S_i / k_i (infra errors count as failures)."""
        return self.successes / self.attempts

    @property
    def infra_rate(self) -> np.ndarray:
        """e_i = E_i / k_i."""
        return self.infra_errors / self.attempts

    def subset(self, ids: list[str] | tuple[str, ...]) -> TaskTable:
        pos = {t: i for i, t in enumerate(self.task_ids)}
        idx = np.fromiter((pos[t] for t in ids), dtype=np.int64, count=len(ids))
        return TaskTable(tuple(ids), self.attempts[idx], self.successes[idx], self.infra_errors[idx])


# ----------------------------------------------------------------------------------------------------------
# Intervals for one proportion
# ----------------------------------------------------------------------------------------------------------


def wilson_interval(p: float, n: float, alpha: float = 0.05) -> Interval:
    """Wilson score interval for proportion ``p`` at (possibly non-integer) sample size ``n``.

    At integer ``n`` and ``p = x/n`` this equals statsmodels ``proportion_confint(method='wilson')``.
    """
    z = sps.norm.isf(alpha / 2)
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(max(p * (1 - p), 0.0) / n + z2 / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def clopper_pearson_interval(p: float, n: float, alpha: float = 0.05) -> Interval:
    """Clopper-Pearson ("exact", beta) interval for ``x = p*n`` successes, ``n`` possibly non-integer."""
    x = p * n
    lo = 0.0 if x <= 0 else float(sps.beta.ppf(alpha / 2, x, n - x + 1))
    hi = 1.0 if x >= n else float(sps.beta.isf(alpha / 2, x + 1, n - x))
    return (lo, hi)


def clustered_se_of_mean(m: np.ndarray) -> float:
    """Task-clustered SE of the equal-weight mean of task means: sd(m, ddof=1)/sqrt(n)."""
    n = m.shape[0]
    if n < 2:
        return float("nan")
    return float(np.std(m, ddof=1) / math.sqrt(n))


def ratio_se(num: np.ndarray, den: np.ndarray) -> float:
    """Delta-method clustered SE of r = sum(num)/sum(den), with n/(n-1) (statistics.md 2(a))."""
    n = num.shape[0]
    total = float(den.sum())
    if n < 2 or total <= 0:
        return float("nan")
    r = float(num.sum()) / total
    return math.sqrt(n / (n - 1) * float(np.sum((num - r * den) ** 2))) / total


class ScoreSummary(_Result):
    """One run's score with its task-clustered uncertainty."""

    score: float
    """As-run score: mean over tasks of S_i/k_i; infra errors count as failures."""
    se: float
    """Task-clustered SE of ``score`` (= sd of task means / sqrt(n))."""
    ci: Interval
    """Displayed interval: Wilson at the effective sample size (Clopper-Pearson at 0 or 1)."""
    ci_method: Literal["wilson_neff", "clopper_pearson_neff"]
    t_ci: Interval
    """score ± t_{n-1} · se, clipped to [0, 1] (valid for n ≳ 50 and 0.1 < score < 0.9)."""
    n_eff: float
    """Effective sample size score(1-score)/se², clipped to [n_tasks, n_trials]."""
    design_effect: float
    """se² / (score(1-score)/n_trials): how much clustering inflates the variance over iid attempts."""
    infra_excluded_score: float | None
    """Sum S_i / sum V_i (ratio estimator; biased when infra errors concentrate on hard tasks)."""
    infra_excluded_se: float | None
    infra_error_rate: float
    """Mean over tasks of E_i/k_i."""
    infra_error_se: float
    between_task_variance: float
    """Var(x) estimate: Var_i(m_i) - mean_i(sigma_i²/k_i), truncated at 0 (statistics.md 1.3)."""
    within_task_variance: float
    """Mean unbiased within-task variance sigma_i² (tasks with k_i ≥ 2), or null-equivalent 0."""
    se_floor: float
    """sqrt(Var(x)/n): the SE that more attempts per task cannot go below."""
    n_tasks: int
    n_trials: int
    n_successes: int
    n_infra_errors: int


def summarize_score(table: TaskTable, alpha: float = 0.05) -> ScoreSummary:
    n, total = table.n_tasks, table.n_trials
    if n == 0:
        raise ValueError("no tasks")
    k = table.attempts.astype(float)
    m = table.as_run
    mbar = float(m.mean())
    se = clustered_se_of_mean(m)
    binom_var = mbar * (1 - mbar)
    if n >= 2 and se > 0:
        n_eff = min(max(binom_var / (se * se), float(n)), float(total))
    else:
        n_eff = float(n)
    if 0.0 < mbar < 1.0:
        ci = wilson_interval(mbar, n_eff, alpha)
        method: Literal["wilson_neff", "clopper_pearson_neff"] = "wilson_neff"
    else:
        ci = clopper_pearson_interval(mbar, n_eff, alpha)
        method = "clopper_pearson_neff"
    if n >= 2 and not math.isnan(se):
        tq = float(sps.t.isf(alpha / 2, n - 1))
        t_ci = (max(0.0, mbar - tq * se), min(1.0, mbar + tq * se))
    else:
        t_ci = (0.0, 1.0)
    deff = (se * se) / (binom_var / total) if binom_var > 0 and n >= 2 else float("nan")
    # 1.3 decomposition: per-task unbiased within variance of the 0/1 outcomes (binary: S(k-S)/(k(k-1)))
    multi = k >= 2
    s = table.successes.astype(float)
    if multi.any():
        sig2 = s[multi] * (k[multi] - s[multi]) / (k[multi] * (k[multi] - 1))
        within = float(sig2.mean())
        within_over_k = float(np.sum(sig2 / k[multi]) / n)
    else:
        within, within_over_k = 0.0, 0.0
    var_m = float(np.var(m, ddof=1)) if n >= 2 else float("nan")
    between = max(0.0, var_m - within_over_k) if n >= 2 else float("nan")
    valid = table.attempts - table.infra_errors
    if valid.sum() > 0:
        r = float(table.successes.sum() / valid.sum())
        r_se = ratio_se(table.successes.astype(float), valid.astype(float))
    else:
        r, r_se = None, None
    e = table.infra_rate
    return ScoreSummary(
        score=mbar,
        se=se,
        ci=ci,
        ci_method=method,
        t_ci=t_ci,
        n_eff=n_eff,
        design_effect=deff,
        infra_excluded_score=r,
        infra_excluded_se=r_se,
        infra_error_rate=float(e.mean()),
        infra_error_se=clustered_se_of_mean(e),
        between_task_variance=between,
        within_task_variance=within,
        se_floor=math.sqrt(between / n) if n >= 2 else float("nan"),
        n_tasks=n,
        n_trials=total,
        n_successes=int(table.successes.sum()),
        n_infra_errors=int(table.infra_errors.sum()),
    )


# ----------------------------------------------------------------------------------------------------------
# Paired difference on task means
# ----------------------------------------------------------------------------------------------------------


class PairedDifference(_Result):
    """d_i = b_i - a_i over shared tasks (B minus A)."""

    estimate: float
    se: float
    """sd(d, ddof=1)/sqrt(n): clustered paired SE with the n/(n-1) factor."""
    df: int
    t_stat: float
    p_t: float
    """Two-sided Student t_{n-1} p-value (= scipy.stats.ttest_rel(b, a))."""
    p_normal: float
    ci: Interval
    """estimate ± t_{n-1, 1-alpha/2} · se."""
    se_unpaired: float
    """sqrt(SE_a² + SE_b²): what ignoring the pairing would give."""
    correlation: float | None
    """Pearson correlation of the task means of A and B (null when either is constant)."""
    mde: float
    """(z_{1-alpha/2} + z_{0.8}) · se: the smallest true gap detected with 80 % power."""
    n: int


def mde_factor(alpha: float = 0.05, power: float = 0.8) -> float:
    return float(sps.norm.isf(alpha / 2) + sps.norm.ppf(power))


def paired_difference(a: np.ndarray, b: np.ndarray, alpha: float = 0.05, power: float = 0.8) -> PairedDifference:
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    n = a.shape[0]
    if n < 2 or b.shape != a.shape:
        raise ValueError("paired difference needs two aligned arrays with at least 2 tasks")
    d = b - a
    est = float(d.mean())
    # a constant difference (to rounding: task means are k/m floats) has SE exactly 0; np.std would
    # return ~1e-17 noise and a p of 1e-33
    se = 0.0 if float(np.ptp(d)) <= 1e-12 else float(np.std(d, ddof=1) / math.sqrt(n))
    se_u = math.sqrt(clustered_se_of_mean(a) ** 2 + clustered_se_of_mean(b) ** 2)
    if se > 0:
        t = est / se
        p_t = float(2 * sps.t.sf(abs(t), n - 1))
        p_n = float(2 * sps.norm.sf(abs(t)))
    else:
        t = 0.0 if est == 0 else math.copysign(math.inf, est)
        p_t = p_n = 1.0 if est == 0 else 0.0
    tq = float(sps.t.isf(alpha / 2, n - 1))
    sa, sb = float(np.std(a)), float(np.std(b))
    corr = float(np.corrcoef(a, b)[0, 1]) if sa > 0 and sb > 0 else None
    return PairedDifference(
        estimate=est,
        se=se,
        df=n - 1,
        t_stat=float(t),
        p_t=p_t,
        p_normal=p_n,
        ci=(est - tq * se, est + tq * se),
        se_unpaired=se_u,
        correlation=corr,
        mde=mde_factor(alpha, power) * se,
        n=n,
    )


# ----------------------------------------------------------------------------------------------------------
# Sign-flip permutation test over tasks
# ----------------------------------------------------------------------------------------------------------


class SignFlipResult(_Result):
    p_value: float
    method: Literal["exact_enumeration", "exact_lattice", "monte_carlo", "degenerate"]
    """``exact_enumeration``: all 2^m sign patterns (m ≤ 20). ``exact_lattice``: the exact null
    distribution of sum(±|d_i|) computed by convolution when every d_i is a multiple of 1/L (task means of
    integer success counts always are, L = lcm of attempt counts). ``monte_carlo``: seeded resampling,
    p = (hits+1)/(B+1)."""
    n_nonzero: int
    n_resamples: int | None = None
    seed: int | None = None


def _lattice(d: np.ndarray, denominators: np.ndarray | None) -> tuple[np.ndarray, int] | None:
    """Integers a_i and L with d_i = a_i / L exactly, or None when d is not on a small lattice."""
    if denominators is None:
        return None
    den = np.unique(np.asarray(denominators, dtype=np.int64))
    L = 1
    for q in den.tolist():
        L = L * q // math.gcd(L, q)
        if L > 10_000:
            return None
    a = np.rint(d * L)
    if np.max(np.abs(a - d * L), initial=0.0) > 1e-6:
        return None
    return a.astype(np.int64), L


def _binom_pmf_symmetric(c: int) -> np.ndarray:
    """P(J = j), J ~ Bin(c, 1/2), j = 0..c; computed in log space (no underflow trouble for large c)."""
    j = np.arange(c + 1)
    logp = special.gammaln(c + 1) - special.gammaln(j + 1) - special.gammaln(c - j + 1) - c * math.log(2)
    return np.exp(logp)


def sign_flip_test(
    d: np.ndarray,
    *,
    denominators: np.ndarray | None = None,
    seed: int = DEFAULT_SEED,
    n_resamples: int = DEFAULT_RESAMPLES,
) -> SignFlipResult:
    """Two-sided sign-flip (paired permutation) test of mean(d) = 0 over tasks.

    Under H0 each d_i is +|d_i| or -|d_i| with probability 1/2; zeros drop out. The p-value is
    P(|sum s_i |d_i|| >= |sum d_i|). Exact by enumeration for m ≤ 20 non-zero d_i; otherwise exact on the
    lattice when ``denominators`` (the attempt counts behind the task means) make every d_i a multiple of
    1/L: values with equal |a_i| form a scaled symmetric binomial and the distributions are convolved.
    Else seeded Monte Carlo. With one attempt per task this is exactly the exact McNemar test.
    """
    d = np.asarray(d, dtype=float)
    nz = np.abs(d) > 1e-12
    m = int(nz.sum())
    if m == 0:
        return SignFlipResult(p_value=1.0, method="degenerate", n_nonzero=0)
    dn = d[nz]
    lat = _lattice(dn, None if denominators is None else np.asarray(denominators))
    if lat is not None:
        a, _L = lat
        obs = abs(int(a.sum()))
        absa = np.abs(a)
        support = int(absa.sum())
        if support <= EXACT_SIGNFLIP_MAX_SUPPORT:
            vals, counts = np.unique(absa, return_counts=True)
            # distribution of T = sum s_i |a_i| on offsets -support..support (index = T + support)
            dist = np.ones(1)
            width = 0
            for v, c in zip(vals.tolist(), counts.tolist()):
                pmf = _binom_pmf_symmetric(c)  # T_v = v(2J - c): values -vc, .., vc step 2v
                comp = np.zeros(2 * v * c + 1)
                comp[:: 2 * v] = pmf
                if dist.size * comp.size > 5_000_000:
                    from scipy.signal import fftconvolve  # lazy: scipy.signal costs ~0.7 s to import

                    dist = fftconvolve(dist, comp)
                    dist[dist < 0] = 0.0
                else:
                    dist = np.convolve(dist, comp)
                width += v * c
            # index i <-> T = i - width
            tvals = np.arange(dist.size) - width
            p = float(dist[np.abs(tvals) >= obs].sum())
            return SignFlipResult(p_value=min(1.0, max(p, 0.0)), method="exact_lattice", n_nonzero=m)
    if m <= ENUMERATE_MAX:
        # exact enumeration of all 2^m sign patterns (non-lattice values)
        patterns = ((np.arange(2**m)[:, None] >> np.arange(m)) & 1).astype(np.int8) * 2 - 1
        stats_ = np.abs(patterns @ np.abs(dn))
        obs_f = abs(float(dn.sum()))
        p = float(np.mean(stats_ >= obs_f - 1e-9 * max(1.0, obs_f)))
        return SignFlipResult(p_value=p, method="exact_enumeration", n_nonzero=m)
    rng = np.random.default_rng(seed)
    absd = np.abs(dn)
    obs_f = abs(float(dn.sum()))
    tol = 1e-9 * max(1.0, obs_f)
    hits = 0
    chunk = max(1, min(n_resamples, 10_000_000 // m))
    done = 0
    while done < n_resamples:
        size = min(chunk, n_resamples - done)
        s = rng.integers(0, 2, (size, m), dtype=np.int8) * 2 - 1
        hits += int((np.abs(s @ absd) >= obs_f - tol).sum())
        done += size
    return SignFlipResult(
        p_value=(hits + 1) / (n_resamples + 1),
        method="monte_carlo",
        n_nonzero=m,
        n_resamples=n_resamples,
        seed=seed,
    )


class McNemarResult(_Result):
    b: int
    """Tasks where A succeeded and B did not."""
    c: int
    """Tasks where B succeeded and A did not."""
    p_value: float
    """Exact two-sided binomial p on the b + c discordant tasks (statsmodels mcnemar(exact=True))."""
    mid_p: float


def mcnemar_exact(b: int, c: int) -> McNemarResult:
    n = b + c
    if n == 0:
        return McNemarResult(b=b, c=c, p_value=1.0, mid_p=1.0)
    lo = min(b, c)
    p = min(1.0, 2.0 * float(sps.binom.cdf(lo, n, 0.5)))
    mid = min(1.0, p - float(sps.binom.pmf(lo, n, 0.5))) if b != c else 1.0
    return McNemarResult(b=b, c=c, p_value=p, mid_p=mid)


# ----------------------------------------------------------------------------------------------------------
# Two independent proportions (aggregate counts)
# ----------------------------------------------------------------------------------------------------------


class FisherResult(_Result):
    table: tuple[tuple[int, int], tuple[int, int]]
    odds_ratio: float
    """Sample odds ratio (x1 (n2-x2)) / ((n1-x1) x2), inf/nan as scipy."""
    p_value: float


def fisher_exact(x1: int, n1: int, x2: int, n2: int) -> FisherResult:
    """Two-sided Fisher exact test of [[x1, n1-x1], [x2, n2-x2]] (sum of tables no more likely)."""
    a, b, c, d = x1, n1 - x1, x2, n2 - x2
    if min(a, b, c, d) < 0:
        raise ValueError("counts must satisfy 0 <= x <= n")
    row1, col1, total = a + b, a + c, a + b + c + d
    if b * c == 0:
        orat = math.nan if a * d == 0 else math.inf
    else:
        orat = (a * d) / (b * c)
    if row1 == 0 or col1 == 0 or row1 == total or col1 == total:
        return FisherResult(table=((a, b), (c, d)), odds_ratio=orat, p_value=1.0)
    lo, hi = max(0, row1 + col1 - total), min(row1, col1)
    support = np.arange(lo, hi + 1)
    pmf = sps.hypergeom.pmf(support, total, col1, row1)
    p_obs = float(sps.hypergeom.pmf(a, total, col1, row1))
    # relative tolerance as in scipy/R for ties in floating point
    p = float(pmf[pmf <= p_obs * (1 + 1e-7)].sum())
    return FisherResult(table=((a, b), (c, d)), odds_ratio=orat, p_value=min(1.0, p))


# ----------------------------------------------------------------------------------------------------------
# Infra-error comparison
# ----------------------------------------------------------------------------------------------------------


class InfraComparison(_Result):
    rate_a: float
    rate_b: float
    se_a: float
    se_b: float
    difference: float
    """Paired difference of task infra rates, B minus A."""
    se: float
    p_value: float
    """From the clustered/paired test the verdict uses (sign-flip, or exact McNemar when k = 1)."""
    test: str
    fisher_p: float
    """Attempt-level Fisher exact p (treats attempts as iid: anti-conservative when clustered)."""
    design_effect_a: float | None
    design_effect_b: float | None
    clustering_warning: bool
    """True when either run's DEFF > 1.5: the Fisher p is not to be trusted, the verdict uses ``test``."""


def _deff_rate(e: np.ndarray, counts: np.ndarray, k: np.ndarray) -> float | None:
    total = float(k.sum())
    pbar = float(counts.sum()) / total
    if pbar <= 0 or pbar >= 1 or e.shape[0] < 2:
        return None
    se_cl = ratio_se(counts.astype(float), k.astype(float))
    return (se_cl * se_cl) / (pbar * (1 - pbar) / total)


def compare_infra(a: TaskTable, b: TaskTable, *, seed: int = DEFAULT_SEED) -> InfraComparison:
    """Paired comparison of infra-error rates on aligned task tables (same task order)."""
    ea, eb = a.infra_rate, b.infra_rate
    d = eb - ea
    n = d.shape[0]
    se = float(np.std(d, ddof=1) / math.sqrt(n)) if n >= 2 else float("nan")
    one_attempt = bool(np.all(a.attempts == 1) and np.all(b.attempts == 1))
    if one_attempt:
        bb = int(np.sum((a.infra_errors == 1) & (b.infra_errors == 0)))
        cc = int(np.sum((a.infra_errors == 0) & (b.infra_errors == 1)))
        p, test = mcnemar_exact(bb, cc).p_value, "mcnemar_exact"
    else:
        sf = sign_flip_test(d, denominators=np.concatenate([a.attempts, b.attempts]), seed=seed)
        p, test = sf.p_value, f"sign_flip_{sf.method}"
    fis = fisher_exact(int(a.infra_errors.sum()), a.n_trials, int(b.infra_errors.sum()), b.n_trials)
    da = _deff_rate(ea, a.infra_errors, a.attempts)
    db = _deff_rate(eb, b.infra_errors, b.attempts)
    warn = any(x is not None and x > 1.5 for x in (da, db))
    return InfraComparison(
        rate_a=float(ea.mean()),
        rate_b=float(eb.mean()),
        se_a=clustered_se_of_mean(ea),
        se_b=clustered_se_of_mean(eb),
        difference=float(d.mean()),
        se=se,
        p_value=p,
        test=test,
        fisher_p=fis.p_value,
        design_effect_a=da,
        design_effect_b=db,
        clustering_warning=warn,
    )


# ----------------------------------------------------------------------------------------------------------
# Bias-aware (honest) interval and the verdict
# ----------------------------------------------------------------------------------------------------------


def honest_critical_value(t: float, alpha: float = 0.05) -> float:
    """cv_alpha(t): the 1-alpha quantile of |N(t, 1)| (Armstrong & Kolesár 2020)."""
    if not math.isfinite(t):
        return math.inf
    if t <= 0:
        return float(sps.norm.isf(alpha / 2))
    return float(math.sqrt(sps.ncx2.ppf(1 - alpha, df=1, nc=t * t)))


def honest_interval(estimate: float, se: float, delta: float, alpha: float = 0.05) -> tuple[Interval, float]:
    """estimate ± cv_alpha(delta/se)·se, covering the true gap for every bias |b| ≤ delta."""
    if se <= 0:
        return (estimate - delta, estimate + delta), math.inf if delta > 0 else 0.0
    cv = honest_critical_value(delta / se, alpha)
    return (estimate - cv * se, estimate + cv * se), cv


Verdict = Literal["not_comparable", "within_statistical_noise", "within_infra_noise", "exceeds_noise"]


class VerdictResult(_Result):
    verdict: Verdict
    reason: str
    underpowered: bool
    honest_ci: Interval | None
    honest_critical_value: float | None


def decide(
    *,
    estimate: float,
    se: float,
    p_value: float,
    delta: float,
    mde: float,
    alpha: float = 0.05,
    gate_failures: list[str] | tuple[str, ...] = (),
    underpowered_floor: float = 0.03,
) -> VerdictResult:
    """The decision rule of statistics.md 2(d), first match wins."""
    underpowered = bool(mde > max(delta, underpowered_floor))
    if gate_failures:
        return VerdictResult(
            verdict="not_comparable",
            reason="; ".join(gate_failures),
            underpowered=underpowered,
            honest_ci=None,
            honest_critical_value=None,
        )
    hci, cv = honest_interval(estimate, se, delta, alpha)
    if not p_value < alpha:
        v: Verdict = "within_statistical_noise"
        reason = f"p = {p_value:.4g} >= alpha = {alpha:g}: the difference is not statistically significant"
    elif delta > 0 and abs(estimate) <= cv * se:
        v = "within_infra_noise"
        reason = (
            f"significant (p = {p_value:.4g}) but |delta_hat| = {abs(estimate):.4f} <= "
            f"cv(delta/SE)·SE = {cv * se:.4f}: the honest interval for a bias up to {delta:.4f} contains 0"
        )
    else:
        v = "exceeds_noise"
        reason = (
            f"|delta_hat| = {abs(estimate):.4f} > cv(delta/SE)·SE = {cv * se:.4f} "
            f"(band {delta:.4f}), p = {p_value:.4g}"
        )
    return VerdictResult(verdict=v, reason=reason, underpowered=underpowered, honest_ci=hci, honest_critical_value=cv)


# ----------------------------------------------------------------------------------------------------------
# Cluster-robust Wald test of hour-bucket drift within one run
# ----------------------------------------------------------------------------------------------------------


class DriftResult(_Result):
    testable: bool
    """False when no task has attempts in two different buckets (task and time are confounded)."""
    n_buckets: int
    bucket_labels: tuple[str, ...]
    bucket_trials: tuple[int, ...]
    bucket_success_rates: tuple[float, ...]
    bucket_mean_residuals: tuple[float, ...]
    """Mean of (outcome - its task's mean) per bucket: time effect net of task difficulty."""
    wald_stat: float | None
    df: int | None
    p_value: float | None
    drift: bool


def hour_bucket_drift(
    task_index: np.ndarray,
    success: np.ndarray,
    bucket: np.ndarray,
    labels: tuple[str, ...],
    alpha: float = 0.05,
    min_bucket_trials: int = 20,
) -> DriftResult:
    """Do outcomes depend on the time bucket within one run, net of task difficulty?

    Residuals r_j = y_j - m_{task(j)} remove each task's mean; regress r on bucket dummies (no intercept)
    and Wald-test equality of the bucket means with a task-clustered covariance (factor G/(G-1)). Buckets
    with fewer than ``min_bucket_trials`` attempts are merged into their neighbour-free "other" by dropping.
    """
    task_index = np.asarray(task_index, dtype=np.int64)
    y = np.asarray(success, dtype=float)
    bucket = np.asarray(bucket, dtype=np.int64)
    nb = len(labels)
    n_t = int(task_index.max()) + 1 if task_index.size else 0
    cnt_b = np.bincount(bucket, minlength=nb)
    succ_b = np.bincount(bucket, weights=y, minlength=nb)
    rates = tuple(float(s / c) if c else float("nan") for s, c in zip(succ_b, cnt_b))
    k = np.bincount(task_index, minlength=n_t)
    m = np.bincount(task_index, weights=y, minlength=n_t) / np.maximum(k, 1)
    r = y - m[task_index]
    res_b = np.bincount(bucket, weights=r, minlength=nb)
    mean_res = tuple(float(s / c) if c else float("nan") for s, c in zip(res_b, cnt_b))
    keep_b = np.flatnonzero(cnt_b >= min_bucket_trials)
    # testable only if some task spans two kept buckets
    in_keep = np.isin(bucket, keep_b)
    testable = False
    if keep_b.size >= 2 and in_keep.any():
        pair = task_index[in_keep] * nb + bucket[in_keep]
        up = np.unique(pair)
        tasks_of_pairs = up // nb
        testable = bool(np.unique(tasks_of_pairs).size < up.size)
    base = dict(
        n_buckets=nb,
        bucket_labels=tuple(labels),
        bucket_trials=tuple(int(c) for c in cnt_b),
        bucket_success_rates=rates,
        bucket_mean_residuals=mean_res,
    )
    if not testable:
        return DriftResult(testable=False, wald_stat=None, df=None, p_value=None, drift=False, **base)
    ti, bi, ri = task_index[in_keep], bucket[in_keep], r[in_keep]
    remap = np.full(nb, -1)
    remap[keep_b] = np.arange(keep_b.size)
    g = remap[bi]
    G = keep_b.size
    ng = np.bincount(g, minlength=G).astype(float)
    beta = np.bincount(g, weights=ri, minlength=G) / ng
    u_rows = ri - beta[g]
    tasks_u, tinv = np.unique(ti, return_inverse=True)
    C = tasks_u.size
    U = np.zeros((C, G))
    np.add.at(U, (tinv, g), u_rows)
    meat = U.T @ U * (C / (C - 1))
    V = meat / np.outer(ng, ng)
    R = np.hstack([-np.ones((G - 1, 1)), np.eye(G - 1)])
    rb = R @ beta
    RVR = R @ V @ R.T
    try:
        W = float(rb @ np.linalg.solve(RVR, rb))
    except np.linalg.LinAlgError:
        W = float(rb @ np.linalg.pinv(RVR) @ rb)
    df = G - 1
    p = float(sps.chi2.sf(W, df))
    return DriftResult(testable=True, wald_stat=W, df=df, p_value=p, drift=bool(p < alpha), **base)


# ----------------------------------------------------------------------------------------------------------
# The task-level comparison pipeline (aligned tables -> verdict); compare.py adds loading and gates on
# manifests around it.
# ----------------------------------------------------------------------------------------------------------

#: Tasks below which the normal/t reference is replaced by the sign-flip test (statistics.md 2(b)4).
SIGNFLIP_BELOW_N = 100
#: Suggested gate: an infra-error rate above this in either run makes the runs not comparable.
INFRA_RATE_CEILING = 0.10
#: Suggested gate: fewer shared tasks than this is not comparable.
MIN_SHARED_TASKS = 30


class PairedComparison(_Result):
    paired: PairedDifference
    test: str
    """``sign_flip_exact_lattice`` / ``sign_flip_exact_enumeration`` / ``sign_flip_monte_carlo`` (n < 100),
    ``mcnemar_exact`` (one attempt per task, n < 100), or ``t`` (n ≥ 100)."""
    p_value: float
    """The p-value the verdict uses (from ``test``)."""
    sign_flip: SignFlipResult
    mcnemar: McNemarResult | None
    infra: InfraComparison
    delta: float
    verdict: VerdictResult
    gate_failures: tuple[str, ...]


def compare_tables(
    a: TaskTable,
    b: TaskTable,
    *,
    delta: float,
    alpha: float = 0.05,
    seed: int = DEFAULT_SEED,
    n_resamples: int = DEFAULT_RESAMPLES,
    extra_gates: tuple[str, ...] | list[str] = (),
    min_shared_tasks: int = MIN_SHARED_TASKS,
    infra_rate_ceiling: float = INFRA_RATE_CEILING,
) -> PairedComparison:
    """Paired comparison of two runs already aligned on the same tasks (same order), B minus A."""
    if a.task_ids != b.task_ids:
        raise ValueError("task tables must be aligned (same task ids in the same order)")
    gates = list(extra_gates)
    n = a.n_tasks
    if n < 2:
        raise ValueError("need at least 2 shared tasks")
    if n < min_shared_tasks:
        gates.append(f"only {n} shared tasks (minimum {min_shared_tasks})")
    ma, mb = a.as_run, b.as_run
    paired = paired_difference(ma, mb, alpha)
    d = mb - ma
    sf = sign_flip_test(d, denominators=np.concatenate([a.attempts, b.attempts]), seed=seed, n_resamples=n_resamples)
    one_attempt = bool(np.all(a.attempts == 1) and np.all(b.attempts == 1))
    mc = None
    if one_attempt:
        mc = mcnemar_exact(int(np.sum((ma == 1) & (mb == 0))), int(np.sum((ma == 0) & (mb == 1))))
    if n < SIGNFLIP_BELOW_N:
        if mc is not None:
            test, p = "mcnemar_exact", mc.p_value
        else:
            test, p = f"sign_flip_{sf.method}", sf.p_value
    else:
        test, p = "t", paired.p_t
    infra = compare_infra(a, b, seed=seed)
    for label, rate in (("A", infra.rate_a), ("B", infra.rate_b)):
        if rate > infra_rate_ceiling:
            gates.append(f"infra-error rate of run {label} is {rate:.4f} > {infra_rate_ceiling:.2f}")
    if delta == 0 and infra.p_value < alpha:
        gates.append(
            f"infra-error rates differ significantly ({infra.rate_a:.4f} vs {infra.rate_b:.4f}, "
            f"{infra.test} p = {infra.p_value:.4g}) although the configurations are matched (band 0)"
        )
    verdict = decide(
        estimate=paired.estimate, se=paired.se, p_value=p, delta=delta, mde=paired.mde, alpha=alpha,
        gate_failures=gates,
    )
    return PairedComparison(
        paired=paired, test=test, p_value=p, sign_flip=sf, mcnemar=mc, infra=infra, delta=delta,
        verdict=verdict, gate_failures=tuple(gates),
    )


# ----------------------------------------------------------------------------------------------------------
# Attempt-index (batch / repeated-run) effect within one run
# ----------------------------------------------------------------------------------------------------------


class AttemptEffect(_Result):
    """Do the attempt indices behave like exchangeable resamples, or like separate runs with their own
    shock (statistics.md 2(d), run-to-run variance)? Uses tasks that have every attempt 0..k-1."""

    testable: bool
    k: int
    n_tasks: int
    attempt_scores: tuple[float, ...]
    """Mean success over the tasks at each attempt index."""
    tau: float | None
    """sqrt(max(0, Var_j(score_j) − mean_i(σ̂_i²)/n)): run-level SD beyond task-level sampling noise."""
    chi2: float | None
    """(k−1)·Var_j(score_j) / (mean σ̂²/n), approx. χ²_{k−1} without an attempt effect."""
    p_value: float | None
    se_with_effect: float | None
    """sqrt(SE² + τ²/k): the score's SE if the attempt indices are separate runs with a common shock."""


def attempt_effect(task_index: np.ndarray, attempt: np.ndarray, success: np.ndarray, se: float) -> AttemptEffect:
    task_index = np.asarray(task_index, dtype=np.int64)
    attempt = np.asarray(attempt, dtype=np.int64)
    y = np.asarray(success, dtype=float)
    n_all = int(task_index.max()) + 1 if task_index.size else 0
    k_i = np.bincount(task_index, minlength=n_all)
    k = int(np.bincount(k_i).argmax()) if n_all else 0
    # tasks whose attempts are exactly 0..k-1
    in_range = attempt < k
    cnt = np.bincount(task_index[in_range], minlength=n_all)
    complete = (cnt == k) & (k_i == k)
    n = int(complete.sum())
    empty = AttemptEffect(
        testable=False, k=k, n_tasks=n, attempt_scores=(), tau=None, chi2=None, p_value=None, se_with_effect=None
    )
    if k < 2 or n < 2:
        return empty
    rows = complete[task_index] & in_range
    Y = np.zeros((n_all, k))
    Y[task_index[rows], attempt[rows]] = y[rows]
    Y = Y[complete]
    s = Y.mean(axis=0)
    sig2 = float(Y.var(axis=1, ddof=1).mean())
    var_s = float(s.var(ddof=1))
    expected = sig2 / n
    tau2 = max(0.0, var_s - expected)
    if expected > 0:
        chi2 = (k - 1) * var_s / expected
        p = float(sps.chi2.sf(chi2, k - 1))
    else:
        chi2, p = (None, None) if var_s == 0 else (math.inf, 0.0)
    return AttemptEffect(
        testable=expected > 0,
        k=k,
        n_tasks=n,
        attempt_scores=tuple(float(v) for v in s),
        tau=math.sqrt(tau2),
        chi2=chi2,
        p_value=p,
        se_with_effect=math.sqrt(se * se + tau2 / k) if math.isfinite(se) else None,
    )
