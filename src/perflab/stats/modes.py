"""Multimodal run times: does a sample of run times have two speeds?

Method: a two-component Gaussian mixture with a common variance, fitted to the log run times by
expectation-maximisation (Dempster, Laird & Rubin 1977), against one speed by the Bayesian
information criterion (Schwarz 1978). Two modes are reported only when (1) BIC prefers the
mixture by at least 6 ("strong" evidence, Kass & Raftery 1995) over one Gaussian and over an
ex-Gaussian (a Gaussian plus an exponential: one speed with an interference tail, the classic
model of a minimum plus delays; maximum likelihood by truncated Newton with the analytic
gradient), (2) the means are at least ``min_separation`` (2.5) common standard deviations apart
(2 is the least at which an equal mixture has two peaks), (3) the smaller mode holds at least
``min_share`` (10 %) of the runs and at least 3, (4) the data dip between the means
(``_dip``), and (5) the slower mode is at least ``min_gap`` (5 %) slower than the faster: a
mix of two clusters 1 % apart (seen: `sleep 0.02` at 21.31 and 21.57 ms, 15 runs) moves a median
by less than their gap, and calling them "two speeds" sent the gate to compare 3 runs with 7. Log times, because run-time noise is multiplicative; a common variance, because
per-component variances let one component collapse onto a few nearly equal runs (an unbounded
likelihood). Without the ex-Gaussian, a skewed single speed (a minimum plus an exponential tail,
checks/noise.py's 'skewed') was called two modes in 14 % of samples at n = 30: two Gaussians fit
a bulk and its tail better than one. Where that rule says one speed, two speeds with a tail are
tried (``_tailed``, 20 runs or more): a mixture of two ex-Gaussians with a common sigma and tau,
against the better single-speed model by BIC (5 parameters), the speeds 2.5 of a speed's whole
SD and 5 % apart, the smaller holding 10 % of the runs and 3, and the runs in the middle third
between the two peaks at most half as many as about either peak. A loaded machine's delays
smear each speed into a skewed hump: two Gaussians fit that worse than one ex-Gaussian, and this
VM's 30/48 ms command under load was called one speed with a tail, and run compared mixtures. False
alarms and detection under every model of checks/noise.py: checks/modes.py (figures in docs/run.md).

``cause()`` says in one line what commonly makes run times bimodal.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

METHOD = ("2-component Gaussian mixture on log times (EM, common variance), or two ex-Gaussians (two "
          "speeds with a common tail), vs 1 Gaussian and vs an ex-Gaussian (one speed with a tail) by "
          "BIC; modes >= 2.5 SD and >= 5% apart, smaller mode >= 10% of runs")
# Two speeds with a tail have five parameters: on fewer runs a spike of equal times and a few
# strays fit them (12 runs of a command cycling 80..120 ms beside a steady 100 ms did)
TAILED_MIN_N = 20
CAUSE = ("common causes of run times at two speeds: a virtual CPU sharing a host core with another "
         "tenant (steal time), CPU frequency changes (turbo, power capping, thermal), or another "
         "process taking turns on the same CPU")


@dataclass(frozen=True)
class Mode:
    """One speed: the median of the runs assigned to it, its share of the runs and its range."""

    center: float
    share: float
    n: int
    low: float
    high: float


@dataclass(frozen=True)
class Modes:
    """The modes of a sample (one when unimodal), with the evidence for more."""

    modes: tuple[Mode, ...]
    n: int
    bic_gain: float = 0.0  # BIC(one) - BIC(mixture): > 0 favours two modes
    separation: float = 0.0  # |mean1 - mean2| / common SD of the fitted mixture (log scale)
    labels: tuple[int, ...] = field(default=(), repr=False)  # mode index of each value, input order
    method: str = METHOD

    @property
    def multimodal(self) -> bool:
        return len(self.modes) > 1

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("labels")
        d["multimodal"] = self.multimodal
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Modes":
        return cls(modes=tuple(Mode(**m) for m in d["modes"]), n=int(d["n"]),
                   bic_gain=float(d.get("bic_gain", 0.0)), separation=float(d.get("separation", 0.0)),
                   method=d.get("method", METHOD))

    def line(self, fmt=lambda v: f"{v:.4g}") -> str:
        """'2 modes: 128 (62% of runs), 190 (38%)'."""
        parts = [f"{fmt(m.center)} ({m.share:.0%}{' of runs' if i == 0 else ''})"
                 for i, m in enumerate(self.modes)]
        return f"{len(self.modes)} modes: " + ", ".join(parts)

    @staticmethod
    def cause() -> str:
        return CAUSE


def _one(values: Sequence[float], labels: Sequence[int] | None = None) -> Modes:
    vals = sorted(values)
    n = len(vals)
    mid = vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2
    return Modes((Mode(mid, 1.0, n, vals[0], vals[-1]),), n, labels=tuple(labels or [0] * n))


# A study asks for the same runs' fit more than once (the run study: each command's runs in its
# own check and again in each comparison with the reference, whose runs every comparison holds),
# and the fit is pure: the same values and rules give the same Modes (frozen, shared safely).
# Samples up to CACHED_MAX_N runs are kept (256 of them, values and labels, hold about 20 MB);
# a larger sample is fitted again: a study holding thousands of them would keep hundreds of MB.
CACHED_MAX_N = 2000


@functools.lru_cache(maxsize=256)
def _detect_cached(values: tuple[float, ...], *rules) -> Modes:
    """_detect, kept for the same values and rules asked for again."""
    return _detect(values, *rules)


def _fits(x, starts: Sequence[tuple[float, float, float, float]], iters: int = 200) -> list:
    """EM for a two-Gaussian mixture with a common variance from each start (mu1, mu2, var, w):
    [(loglik, mu1, mu2, var, w, resp2)] in the starts' order. The starts run as the rows of one
    array (a step of four starts costs about what a step of one does on 30 runs, where numpy's
    per-call cost is most of it); each row stops where a lone EM from its start would, and keeps
    what that EM returns: the same numbers (elementwise, and each row summed as a 1-d array is)."""
    import numpy as np

    total = np.add.reduce
    n = x.size
    mu1, mu2, var, w = (np.array([[s[i]] for s in starts], dtype=float) for i in range(4))
    floor = [float(v) * 1e-6 for v in var[:, 0]]
    ll_old = [-math.inf] * len(starts)
    out: list = [None] * len(starts)
    live = list(range(len(starts)))
    # The M-step's squared distances to the new means are the next E-step's: computed once
    d1, d2 = (x - mu1) ** 2, (x - mu2) ** 2
    with np.errstate(all="ignore"):  # a stopped row's next steps may divide by zero, unused
        for _ in range(iters):
            a = np.log(np.maximum(1 - w, 1e-300)) - d1 / (2 * var)
            b = np.log(np.maximum(w, 1e-300)) - d2 / (2 * var)
            top = np.maximum(a, b)
            lse = top + np.log(np.exp(a - top) + np.exp(b - top))
            sums = total(lse, axis=1)
            r = np.exp(b - lse)
            s2 = total(r, axis=1)
            ll = {}
            for i in live:
                ll[i] = float(sums[i] - n * 0.5 * math.log(2 * math.pi * float(var[i, 0])))
                if s2[i] < 1e-9 or s2[i] > n - 1e-9:  # one component emptied: stop before the M-step
                    out[i] = (ll[i], float(mu1[i, 0]), float(mu2[i, 0]), float(var[i, 0]), float(w[i, 0]), r[i])
            live = [i for i in live if out[i] is None]
            if not live:
                break
            q = 1 - r
            w = (s2 / n)[:, None]
            mu1 = (total(q * x, axis=1) / (n - s2))[:, None]
            mu2 = (total(r * x, axis=1) / s2)[:, None]
            d1, d2 = (x - mu1) ** 2, (x - mu2) ** 2
            var = (total(q * d1 + r * d2, axis=1) / n)[:, None]
            for i in live:
                var[i, 0] = max(float(var[i, 0]), floor[i])
                if ll[i] - ll_old[i] < 1e-10 * abs(ll[i]):
                    out[i] = (ll[i], float(mu1[i, 0]), float(mu2[i, 0]), float(var[i, 0]), float(w[i, 0]), r[i])
                ll_old[i] = ll[i]
            live = [i for i in live if out[i] is None]
            if not live:
                break
    for i in live:  # the steps spent: the last step's fit
        out[i] = (ll[i], float(mu1[i, 0]), float(mu2[i, 0]), float(var[i, 0]), float(w[i, 0]), r[i])
    return out


def _dip(x, mu1: float, mu2: float, var: float, w: float) -> bool:
    """Whether the data (not only the fit) dip between the modes: the fitted density's lowest
    point between the means holds at most half as many runs (within +-SD/2) as either mean.
    A skewed unimodal sample (a sharp minimum and a long tail) fits a mixture well but has no dip."""
    import numpy as np

    t = np.linspace(min(mu1, mu2), max(mu1, mu2), 801)
    dens = (1 - w) * np.exp(-(t - mu1) ** 2 / (2 * var)) + w * np.exp(-(t - mu2) ** 2 / (2 * var))
    valley = float(t[int(np.argmin(dens))])
    half = 0.5 * math.sqrt(var)

    def near(c: float) -> int:
        return int((np.abs(x - c) <= half).sum())

    return 2 * near(valley) <= min(near(mu1), near(mu2))


def _exgauss_loglik(x) -> float:
    """Maximum log-likelihood of an ex-Gaussian (normal plus exponential) on ``x``, by truncated
    Newton (TNC) on (mu, log sigma, log tau) with the analytic gradient, from two starts (a short
    and a long tail). As tau -> 0 it is one Gaussian: it nests the Gaussian null."""
    import numpy as np
    from scipy.special import log_ndtr

    m, s = float(x.mean()), float(x.std())
    half_log_2pi = 0.5 * math.log(2 * math.pi)

    total = np.add.reduce  # ndarray.sum's Python layers cost as much as the sum of 30 runs

    def nll(p):
        mu, log_s, log_t = p
        sg, t = math.exp(log_s), math.exp(log_t)
        dx, mx = x - mu, mu - x
        z = dx / sg - sg / t
        lphi = log_ndtr(z)
        ll = -log_t + mx / t + sg * sg / (2 * t * t) + lphi
        r = np.exp(-0.5 * z * z - half_log_2pi - lphi)  # the normal's hazard at z: phi / Phi
        g_mu = float(total(1 / t - r / sg))
        g_s = float(total(sg / t ** 2 - r * (dx / sg ** 2 + 1 / t))) * sg
        g_t = float(total(-1 / t - mx / t ** 2 - sg * sg / t ** 3 + r * sg / t ** 2)) * t
        return -float(total(ll)), -np.array([g_mu, g_s, g_t])

    # Bounds keep exp() finite: a tail or a spread beyond 1e-4..10 sample SDs fits no better.
    lo, hi = math.log(s * 1e-4), math.log(s * 10)
    bounds = [(m - 10 * s, m + 10 * s), (lo, hi), (lo, hi)]
    best = math.inf
    with np.errstate(all="ignore"):
        for frac in (0.3, 0.8):
            tau = s * frac
            sg = math.sqrt(max(s * s - tau * tau, (0.1 * s) ** 2))
            # TNC: as good a maximum as L-BFGS-B here, in a twentieth of its time on 30 runs
            fun, _ = _tnc(nll, (m - tau, math.log(sg), math.log(tau)), bounds)
            if math.isfinite(fun):
                best = min(best, fun)
    return -best


def _tnc(fun, x0, bounds) -> tuple[float, Any]:
    """The minimum of ``fun`` (returning the value and its gradient) within ``bounds`` by truncated
    Newton: scipy.optimize.minimize's TNC, through its public interface (scipy's private TNC
    routine, called directly, saved about 60 us an evaluation, but its positional arguments are
    not scipy's promise to keep): (value, x)."""
    import numpy as np
    from scipy.optimize import minimize

    at = minimize(fun, np.asarray(x0, dtype=float), jac=True, method="TNC", bounds=bounds).x
    # minimize re-evaluates at the end too: TNC's own value may lag its point after rescaling
    return float(fun(at)[0]), at


def detect_modes(values: Sequence[float], min_n: int = 10, min_share: float = 0.10,
                 min_separation: float = 2.5, min_bic_gain: float = 6.0, tail_null: bool = True,
                 min_gap: float = 0.05, tailed: bool = True) -> Modes:
    """The modes of positive ``values`` (e.g. run times); one mode unless the mixture test says two.
    ``tail_null=False`` leaves out the ex-Gaussian: the rule before it, which checks/modes.py
    runs to show that its null can fail. ``tailed=False`` leaves out two speeds with a tail (the
    rule before it, which tests/unit/test_modes.py shows missing a loaded machine's two speeds)."""
    vals = tuple(float(v) for v in values)
    if any(not (v > 0) or math.isinf(v) for v in vals):
        raise ValueError("run times must be positive and finite")
    rules = (min_n, min_share, min_separation, min_bic_gain, tail_null, min_gap, tailed)
    return (_detect_cached if len(vals) <= CACHED_MAX_N else _detect)(vals, *rules)


def _detect(values: tuple[float, ...], min_n: int, min_share: float, min_separation: float,
            min_bic_gain: float, tail_null: bool, min_gap: float, tailed: bool) -> Modes:
    """detect_modes on validated values."""
    import numpy as np

    vals = list(values)
    n = len(vals)
    x = np.log(np.asarray(vals))
    var1 = float(x.var())
    if n < min_n or var1 <= 0:
        return _one(vals)
    ll1 = float(-0.5 * n * (math.log(2 * math.pi * var1) + 1))
    xs = np.sort(x)
    gaps = np.diff(xs)
    k_min = max(3, math.ceil(min_share * n))
    starts = {n // 2}
    if n - 2 * k_min >= 0:
        cut = int(np.argmax(gaps[k_min - 1:n - k_min])) + k_min  # largest gap leaving k_min each side
        starts.add(cut)
    starts.update({max(k_min, n // 5), min(n - k_min, n - n // 5)})
    inits = []
    for cut in sorted(starts):
        if not 0 < cut < n:
            continue
        lo, hi = xs[:cut], xs[cut:]
        var0 = max(float((((lo - lo.mean()) ** 2).sum() + ((hi - hi.mean()) ** 2).sum()) / n), var1 * 1e-3)
        inits.append((float(lo.mean()), float(hi.mean()), var0, (n - cut) / n))
    best = None
    for fit in _fits(x, inits):
        if best is None or fit[0] > best[0]:
            best = fit
    assert best is not None  # starts always holds n // 2, inside (0, n) for n >= min_n
    ll2, mu1, mu2, var, w, r = best
    # BIC = -2 ll + p ln n, with p = 2 (one Gaussian), 3 (ex-Gaussian), 4 (two means, a variance,
    # a weight) and 5 (the same two speeds with a common tail); the gain is over the better
    # single-speed model
    log_n = math.log(n)
    gain = (-2 * ll1 + 2 * log_n) - (-2 * ll2 + 4 * log_n)
    sep = abs(mu2 - mu1) / math.sqrt(var)
    labels = [int(p > 0.5) if mu2 >= mu1 else int(p <= 0.5) for p in r]  # 1: the slower mode
    counts = [labels.count(0), labels.count(1)]
    gap = abs(mu2 - mu1) >= math.log1p(min_gap)
    plain = (gain >= min_bic_gain and sep >= min_separation and min(counts) >= max(3, min_share * n)
             and gap and _dip(x, mu1, mu2, var, w))
    if not tail_null:
        return _modes(vals, labels, gain, sep) if plain else Modes(_one(vals).modes, n, gain, sep, tuple([0] * n))
    # Where neither rule can say two speeds, the ex-Gaussian is not fitted: it imports scipy
    # (about 240 ms), which a noisy `perflab run --runs 10` paid for nothing.
    if not plain and (not gap or not tailed or n < TAILED_MIN_N):
        return Modes(_one(vals).modes, n, gain, sep, tuple([0] * n))
    # Only now the ex-Gaussian (about 10 ms): a skewed single speed is the likeliest false alarm.
    one_bic = min(-2 * ll1 + 2 * log_n, -2 * _exgauss_loglik(x) + 3 * log_n)
    if plain and one_bic - (-2 * ll2 + 4 * log_n) >= min_bic_gain:
        return _modes(vals, labels, min(gain, one_bic - (-2 * ll2 + 4 * log_n)), sep)
    # Two speeds each with a tail (a loaded machine's delays smear each speed into a skewed hump:
    # two Gaussians fit that worse than one ex-Gaussian, and the plain rule said one speed).
    if not tailed or n < TAILED_MIN_N:
        return Modes(_one(vals).modes, n, min(gain, one_bic - (-2 * ll2 + 4 * log_n)), sep, tuple([0] * n))
    found = _tailed(x, min(mu1, mu2), max(mu1, mu2), math.sqrt(var), one_bic, min_bic_gain,
                    min_separation, max(3, min_share * n), min_gap)
    if found is None:
        return Modes(_one(vals).modes, n, min(gain, one_bic - (-2 * ll2 + 4 * log_n)), sep, tuple([0] * n))
    return _modes(vals, *found)


def _modes(vals: list[float], labels: Sequence[int], gain: float, sep: float) -> Modes:
    """Two modes from each value's label (0 fast, 1 slow): each mode's median, share and range."""
    n = len(vals)
    modes = []
    for k in (0, 1):
        mine = sorted(v for v, lab in zip(vals, labels) if lab == k)
        m = len(mine)
        mid = mine[m // 2] if m % 2 else (mine[m // 2 - 1] + mine[m // 2]) / 2
        modes.append(Mode(mid, m / n, m, mine[0], mine[-1]))
    return Modes(tuple(modes), n, gain, sep, tuple(labels))


def _tailed(x, mu1: float, mu2: float, s: float, one_bic: float, min_bic_gain: float,
            min_separation: float, min_count: float, min_gap: float):
    """The rule on two speeds with a common tail (``_exmix``): (labels, BIC gain, separation) or
    None. The separation is the gap between the two speeds' locations over a speed's whole SD
    (sqrt(sigma^2 + tau^2)); the data must dip between the two fitted peaks."""
    import numpy as np

    fit = _exmix(x, mu1, mu2, s)
    if fit is None:
        return None
    ll, m1, m2, sg, t, w, r = fit
    gain = one_bic - (-2 * ll + 5 * math.log(x.size))
    sd = math.hypot(sg, t)
    sep = (m2 - m1) / sd
    labels = [int(p > 0.5) for p in r]
    if (gain < min_bic_gain or sep < min_separation or min(labels.count(0), labels.count(1)) < min_count
            or m2 - m1 < math.log1p(min_gap)):
        return None
    # Where each speed's density peaks (an ex-Gaussian's mode lies a little above mu): the runs
    # in the middle third between the peaks at most half as many as in a third as wide about
    # either peak. Not the fitted valley, as _dip: a speed with a sharp floor puts it at its edge.
    grid = np.linspace(m1 - sd, m2 + 2 * sd, 1201)
    peaks = [float(grid[int(np.argmax(_exg_density(grid, m, sg, t)))]) for m in (m1, m2)]
    valley, half = 0.5 * (peaks[0] + peaks[1]), (peaks[1] - peaks[0]) / 6
    if half <= 0:
        return None

    def near(c: float) -> int:
        return int((np.abs(x - c) <= half).sum())

    if 2 * near(valley) > min(near(peaks[0]), near(peaks[1])):
        return None
    return labels, gain, sep


def _exg_density(grid, mu: float, sg: float, t: float):
    """The ex-Gaussian density on ``grid``."""
    import numpy as np
    from scipy.special import log_ndtr

    return np.exp(-math.log(t) + (mu - grid) / t + sg * sg / (2 * t * t) + log_ndtr((grid - mu) / sg - sg / t))


def _exmix(x, mu1: float, mu2: float, s: float):
    """Two speeds, each with an interference tail: a mixture of two ex-Gaussians with a common
    sigma and tau on ``x`` (log times), by maximum likelihood (truncated Newton, analytic gradient) from
    the Gaussian mixture's means and from each bulk's low quantile. (loglik, mu1, mu2, sigma, tau,
    w, posterior of the slower speed); mu1 <= mu2."""
    import numpy as np
    from scipy.special import expit, log_ndtr

    half_log_2pi = 0.5 * math.log(2 * math.pi)

    # The two speeds' terms as the rows of one (2, n) array: half the numpy calls of a loop over
    # them, the same numbers (elementwise, and each row summed as a 1-d array is)
    total = np.add.reduce

    def parts(p):
        m1, m2, log_s, log_t, lw = p
        sg, t = math.exp(log_s), math.exp(log_t)
        w = 1 / (1 + math.exp(-lw))
        ms = np.array([[m1], [m2]])
        dx, mx = x - ms, ms - x
        z = dx / sg - sg / t
        lphi = log_ndtr(z)
        ll = -log_t + mx / t + sg * sg / (2 * t * t) + lphi
        h = np.exp(-0.5 * z * z - half_log_2pi - lphi)  # phi / Phi at z
        return sg, t, w, ll, dx, mx, h

    def nll(p):
        sg, t, w, ll, dx, mx, h = parts(p)
        a, b = math.log(1 - w) + ll[0], math.log(w) + ll[1]
        top = np.maximum(a, b)
        lse = top + np.log(np.exp(a - top) + np.exp(b - top))
        r = np.exp(b - lse)  # the slower speed's share of each run
        resp = np.array([1 - r, r])
        # d/dm of a component's log density, d/d log sigma, d/d log tau (as _exgauss_loglik)
        g_m = total(resp * (1 / t - h / sg), axis=1)
        g_s = total(resp * (sg / t ** 2 - h * (dx / sg ** 2 + 1 / t)), axis=1)
        g_t = total(resp * (-1 / t - mx / t ** 2 - sg * sg / t ** 3 + h * sg / t ** 2), axis=1)
        gs = gt = 0.0
        for k in (0, 1):
            gs += float(g_s[k]) * sg
            gt += float(g_t[k]) * t
        g = [float(g_m[0]), float(g_m[1]), gs, gt, float(total(r - w))]
        return -float(total(lse)), -np.array(g)

    spread = float(x.std())
    lo_b, hi_b = math.log(spread * 1e-2), math.log(spread * 10)
    bounds = [(float(x.min()) - spread, float(x.max())), (float(x.min()) - spread, float(x.max())),
              (lo_b, hi_b), (lo_b, hi_b), (-6.0, 6.0)]
    cut = 0.5 * (mu1 + mu2)
    low, high = x[x <= cut], x[x > cut]
    tries = [(mu1, mu2, 0.5 * s, 0.5 * s, 0.0)]
    if low.size and high.size:
        tau = max(float(np.median(low) - np.quantile(low, 0.1)), 0.05 * s)
        tries.append((float(np.quantile(low, 0.25)), float(np.quantile(high, 0.25)), tau, tau,
                      math.log(high.size / low.size)))
    best = None
    with np.errstate(all="ignore"):
        for m1, m2, sg, t, lw in tries:
            p0: tuple[float, ...] = (m1, m2, math.log(max(sg, spread * 2e-4)), math.log(max(t, spread * 2e-4)), lw)
            p0 = tuple(min(max(v, b[0]), b[1]) for v, b in zip(p0, bounds))
            fit = _tnc(nll, p0, bounds)
            if math.isfinite(fit[0]) and (best is None or fit[0] < best[0]):
                best = fit
    if best is None:
        return None
    fun, at = best
    m1, m2 = at[0], at[1]
    sg, t, w, ll, _, _, _ = parts(at)
    a, b = math.log(1 - w) + ll[0], math.log(w) + ll[1]
    r = expit(b - a)
    if m2 < m1:
        m1, m2, w, r = m2, m1, 1 - w, 1 - r
    return -fun, float(m1), float(m2), sg, t, w, r
