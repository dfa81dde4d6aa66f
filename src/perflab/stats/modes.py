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
a bulk and its tail better than one. False alarms and detection under every model of
checks/noise.py: checks/modes_check.py (figures in docs/run.md).

``cause()`` says in one line what commonly makes run times bimodal.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Sequence

METHOD = ("2-component Gaussian mixture on log times (EM, common variance) vs 1 Gaussian and vs an "
          "ex-Gaussian (one speed with a tail) by BIC; modes >= 2.5 SD and >= 5% apart, smaller mode >= 10% of runs")
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


def _fit(x, mu1: float, mu2: float, var: float, w: float, iters: int = 200):
    """EM for a two-Gaussian mixture with a common variance: (loglik, mu1, mu2, var, w, resp2)."""
    import numpy as np

    floor = var * 1e-6
    ll_old = -math.inf
    for _ in range(iters):
        a = np.log(max(1 - w, 1e-300)) - (x - mu1) ** 2 / (2 * var)
        b = np.log(max(w, 1e-300)) - (x - mu2) ** 2 / (2 * var)
        top = np.maximum(a, b)
        lse = top + np.log(np.exp(a - top) + np.exp(b - top))
        ll = float(lse.sum() - x.size * 0.5 * math.log(2 * math.pi * var))
        r = np.exp(b - lse)
        s2 = float(r.sum())
        if s2 < 1e-9 or s2 > x.size - 1e-9:
            break
        w = s2 / x.size
        mu1 = float(((1 - r) * x).sum() / (x.size - s2))
        mu2 = float((r * x).sum() / s2)
        var = max(float(((1 - r) * (x - mu1) ** 2 + r * (x - mu2) ** 2).sum() / x.size), floor)
        if ll - ll_old < 1e-10 * abs(ll):
            break
        ll_old = ll
    return ll, mu1, mu2, var, w, r


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
    from scipy.optimize import minimize
    from scipy.special import log_ndtr

    m, s = float(x.mean()), float(x.std())
    half_log_2pi = 0.5 * math.log(2 * math.pi)

    def nll(p):
        mu, log_s, log_t = p
        sg, t = math.exp(log_s), math.exp(log_t)
        z = (x - mu) / sg - sg / t
        lphi = log_ndtr(z)
        ll = -log_t + (mu - x) / t + sg * sg / (2 * t * t) + lphi
        r = np.exp(-0.5 * z * z - half_log_2pi - lphi)  # the normal's hazard at z: phi / Phi
        g_mu = float((1 / t - r / sg).sum())
        g_s = float((sg / t ** 2 - r * ((x - mu) / sg ** 2 + 1 / t)).sum()) * sg
        g_t = float((-1 / t - (mu - x) / t ** 2 - sg * sg / t ** 3 + r * sg / t ** 2).sum()) * t
        return -float(ll.sum()), -np.array([g_mu, g_s, g_t])

    # Bounds keep exp() finite: a tail or a spread beyond 1e-4..10 sample SDs fits no better.
    lo, hi = math.log(s * 1e-4), math.log(s * 10)
    bounds = [(m - 10 * s, m + 10 * s), (lo, hi), (lo, hi)]
    best = math.inf
    with np.errstate(all="ignore"):
        for frac in (0.3, 0.8):
            tau = s * frac
            sg = math.sqrt(max(s * s - tau * tau, (0.1 * s) ** 2))
            # TNC: as good a maximum as L-BFGS-B here, in a twentieth of its time on 30 runs
            fit = minimize(nll, (m - tau, math.log(sg), math.log(tau)), jac=True, method="TNC",
                           bounds=bounds)
            if math.isfinite(fit.fun):
                best = min(best, float(fit.fun))
    return -best


def detect_modes(values: Sequence[float], min_n: int = 10, min_share: float = 0.10,
                 min_separation: float = 2.5, min_bic_gain: float = 6.0, tail_null: bool = True,
                 min_gap: float = 0.05) -> Modes:
    """The modes of positive ``values`` (e.g. run times); one mode unless the mixture test says two.
    ``tail_null=False`` leaves out the ex-Gaussian: the rule before it, which checks/modes_check.py
    runs to show that its null can fail."""
    import numpy as np

    vals = [float(v) for v in values]
    if any(not (v > 0) or math.isinf(v) for v in vals):
        raise ValueError("run times must be positive and finite")
    n = len(vals)
    x = np.log(np.asarray(vals))
    var1 = float(x.var())
    if n < min_n or var1 <= 0:
        return _one(vals)
    ll1 = float(-0.5 * n * (math.log(2 * math.pi * var1) + 1))
    best = None
    xs = np.sort(x)
    gaps = np.diff(xs)
    k_min = max(3, math.ceil(min_share * n))
    starts = {n // 2}
    if n - 2 * k_min >= 0:
        cut = int(np.argmax(gaps[k_min - 1:n - k_min])) + k_min  # largest gap leaving k_min each side
        starts.add(cut)
    starts.update({max(k_min, n // 5), min(n - k_min, n - n // 5)})
    for cut in sorted(starts):
        if not 0 < cut < n:
            continue
        lo, hi = xs[:cut], xs[cut:]
        var0 = max(float((((lo - lo.mean()) ** 2).sum() + ((hi - hi.mean()) ** 2).sum()) / n), var1 * 1e-3)
        fit = _fit(x, float(lo.mean()), float(hi.mean()), var0, (n - cut) / n)
        if best is None or fit[0] > best[0]:
            best = fit
    ll2, mu1, mu2, var, w, r = best
    # BIC = -2 ll + p ln n, with p = 2 (one Gaussian), 3 (ex-Gaussian) and 4 (two means, a
    # variance, a weight); the gain is over the better single-speed model
    gain = (-2 * ll1 + 2 * math.log(n)) - (-2 * ll2 + 4 * math.log(n))
    sep = abs(mu2 - mu1) / math.sqrt(var)
    labels = [int(p > 0.5) if mu2 >= mu1 else int(p <= 0.5) for p in r]  # 1: the slower mode
    counts = [labels.count(0), labels.count(1)]
    if (gain < min_bic_gain or sep < min_separation or min(counts) < max(3, min_share * n)
            or abs(mu2 - mu1) < math.log1p(min_gap) or not _dip(x, mu1, mu2, var, w)):
        return Modes(_one(vals).modes, n, gain, sep, tuple([0] * n))
    # Only now the ex-Gaussian (about 10 ms): a skewed single speed is the likeliest false alarm.
    if tail_null:
        gain = min(gain, (-2 * _exgauss_loglik(x) + 3 * math.log(n)) - (-2 * ll2 + 4 * math.log(n)))
        if gain < min_bic_gain:
            return Modes(_one(vals).modes, n, gain, sep, tuple([0] * n))
    modes = []
    for k in (0, 1):
        mine = sorted(v for v, lab in zip(vals, labels) if lab == k)
        m = len(mine)
        mid = mine[m // 2] if m % 2 else (mine[m // 2 - 1] + mine[m // 2]) / 2
        modes.append(Mode(mid, m / n, m, mine[0], mine[-1]))
    return Modes(tuple(modes), n, gain, sep, tuple(labels))
