"""Inline SVG charts for the HTML report (pure presentation: geometry only, no statistics)."""

from __future__ import annotations

from html import escape
from typing import Any

COLORS = {"S": "#2e7d32", "F": "#c62828", "T": "#ef6c00", "I": "#6a1b9a", "a": "#1565c0", "b": "#00897b"}
FONT = 'font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif"'


def _f(x: float) -> str:
    return f"{x:.2f}"


def score_chart(report: dict[str, Any], width: int = 640) -> str:
    """Per-run as-run score with its interval on a 0-100 % axis."""
    left, right, row = 170, 30, 46
    h = 40 + row * 2 + 30
    span = width - left - right

    def x(v: float) -> float:
        return left + span * min(1.0, max(0.0, v))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {h}" width="{width}" height="{h}" role="img" aria-label="score per run">']
    for t in range(0, 11):
        xv = x(t / 10)
        parts.append(f'<line x1="{_f(xv)}" y1="30" x2="{_f(xv)}" y2="{h - 28}" stroke="#e0e0e0"/>')
        parts.append(f'<text x="{_f(xv)}" y="{h - 12}" font-size="11" text-anchor="middle" {FONT}>{t * 10}%</text>')
    for i, key in enumerate(("a", "b")):
        r = report["runs"][key]
        y = 40 + i * row + row / 2
        lo, hi = r["ci"]
        parts.append(f'<text x="8" y="{_f(y + 4)}" font-size="12" {FONT}>{key.upper()}: {escape(r["name"][:22])}</text>')
        parts.append(f'<line x1="{_f(x(lo))}" y1="{_f(y)}" x2="{_f(x(hi))}" y2="{_f(y)}" stroke="{COLORS[key]}" stroke-width="3"/>')
        for e in (lo, hi):
            parts.append(f'<line x1="{_f(x(e))}" y1="{_f(y - 7)}" x2="{_f(x(e))}" y2="{_f(y + 7)}" stroke="{COLORS[key]}" stroke-width="2"/>')
        parts.append(f'<circle cx="{_f(x(r["score"]))}" cy="{_f(y)}" r="6" fill="{COLORS[key]}"/>')
        parts.append(
            f'<text x="{_f(x(r["score"]))}" y="{_f(y - 11)}" font-size="11" text-anchor="middle" {FONT}>'
            f'{r["score"] * 100:.1f}%</text>'
        )
    parts.append(f'<text x="{left}" y="18" font-size="12" {FONT}>As-run score with 95% interval (Wilson at n_eff)</text>')
    parts.append("</svg>")
    return "".join(parts)


def difference_chart(report: dict[str, Any], width: int = 640) -> str:
    """Paired difference B − A with the plain and honest intervals against the ±δ band."""
    left, right = 30, 30
    h = 150
    d = report["delta"]
    band = report["infra_band"] or 0.0
    ci = report["ci"]
    hci = report["honest_ci"] or ci
    ext = max(abs(v) for v in (*ci, *hci, band, abs(d), 0.02)) * 1.15
    span = width - left - right

    def x(v: float) -> float:
        return left + span * (v + ext) / (2 * ext)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {h}" width="{width}" height="{h}" role="img" aria-label="paired difference">']
    if band > 0:
        parts.append(
            f'<rect x="{_f(x(-band))}" y="28" width="{_f(x(band) - x(-band))}" height="{h - 62}" fill="#fff3cd" stroke="#f0c36d"/>'
        )
        parts.append(f'<text x="{_f(x(band) + 3)}" y="40" font-size="10" {FONT}>±δ = {band * 100:.1f} pp</text>')
    parts.append(f'<line x1="{_f(x(0))}" y1="24" x2="{_f(x(0))}" y2="{h - 30}" stroke="#555" stroke-dasharray="4 3"/>')
    step = 0.01 if ext <= 0.06 else (0.02 if ext <= 0.12 else (0.05 if ext <= 0.3 else 0.1))
    k = -int(ext / step)
    while k * step <= ext:
        v = k * step
        parts.append(f'<line x1="{_f(x(v))}" y1="{h - 32}" x2="{_f(x(v))}" y2="{h - 28}" stroke="#555"/>')
        parts.append(f'<text x="{_f(x(v))}" y="{h - 14}" font-size="10" text-anchor="middle" {FONT}>{v * 100:+.0f}</text>')
        k += 1
    for y, (lo, hi), color, label in (
        (62, hci, "#8d6e63", "honest CI"),
        (92, ci, "#263238", "plain CI"),
    ):
        parts.append(f'<line x1="{_f(x(lo))}" y1="{y}" x2="{_f(x(hi))}" y2="{y}" stroke="{color}" stroke-width="3"/>')
        for e in (lo, hi):
            parts.append(f'<line x1="{_f(x(e))}" y1="{y - 6}" x2="{_f(x(e))}" y2="{y + 6}" stroke="{color}" stroke-width="2"/>')
        parts.append(f'<text x="{_f(x(hi) + 6)}" y="{y + 4}" font-size="10" {FONT}>{label}</text>')
    parts.append(f'<circle cx="{_f(x(d))}" cy="92" r="6" fill="#d32f2f"/>')
    parts.append(f'<text x="{_f(x(d))}" y="112" font-size="11" text-anchor="middle" {FONT}>{d * 100:+.2f} pp</text>')
    parts.append(f'<text x="{left}" y="16" font-size="12" {FONT}>Paired difference B − A (percentage points)</text>')
    parts.append("</svg>")
    return "".join(parts)


def outcome_strips(report: dict[str, Any], width: int = 1100, max_tasks: int = 400) -> str:
    """One row per shared task: A's attempts then B's, coloured by outcome (sorted by mean score)."""
    rows = sorted(report["per_task"], key=lambda t: (-(t["a"] + t["b"]), t["task_id"]))[:max_tasks]
    ka = max((len(t["outcomes_a"]) for t in rows), default=1)
    kb = max((len(t["outcomes_b"]) for t in rows), default=1)
    cell, gap, label_w, rh = 10, 18, 300, 12
    h = 34 + rh * len(rows) + 10
    w = min(width, label_w + (ka + kb) * cell + gap + 60)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="per-task outcomes">']
    xa, xb = label_w, label_w + ka * cell + gap
    parts.append(f'<text x="{xa}" y="14" font-size="11" {FONT}>A</text><text x="{xb}" y="14" font-size="11" {FONT}>B</text>')
    for i, t in enumerate(rows):
        y = 24 + i * rh
        parts.append(f'<text x="{label_w - 6}" y="{y + 9}" font-size="9" text-anchor="end" {FONT}>{escape(t["task_id"][:48])}</text>')
        for x0, s in ((xa, t["outcomes_a"]), (xb, t["outcomes_b"])):
            for j, c in enumerate(s):
                parts.append(f'<rect x="{x0 + j * cell}" y="{y}" width="{cell - 1}" height="{rh - 2}" fill="{COLORS.get(c, "#999")}"/>')
    parts.append("</svg>")
    return "".join(parts)


def infra_chart(report: dict[str, Any], width: int = 640) -> str:
    """Infra-error causes per run (counts of final attempts)."""
    causes = sorted(set(report["runs"]["a"]["infra_causes"]) | set(report["runs"]["b"]["infra_causes"]))
    if not causes:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} 40" width="{width}" height="40" role="img" aria-label="infra errors">'
            f'<text x="8" y="24" font-size="12" {FONT}>No infra errors in either run.</text></svg>'
        )
    left, row = 150, 16
    h = 30 + len(causes) * (2 * row + 6) + 10
    mx = max(max(report["runs"][k]["infra_causes"].get(c, 0) for k in ("a", "b")) for c in causes) or 1
    span = width - left - 60
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {h}" width="{width}" height="{h}" role="img" aria-label="infra errors">']
    parts.append(f'<text x="8" y="16" font-size="12" {FONT}>Infra-error causes (final attempts)</text>')
    for i, c in enumerate(causes):
        y0 = 28 + i * (2 * row + 6)
        parts.append(f'<text x="8" y="{y0 + row + 2}" font-size="11" {FONT}>{escape(c)}</text>')
        for j, k in enumerate(("a", "b")):
            n = report["runs"][k]["infra_causes"].get(c, 0)
            wbar = span * n / mx
            parts.append(f'<rect x="{left}" y="{y0 + j * row}" width="{_f(wbar)}" height="{row - 3}" fill="{COLORS[k]}"/>')
            parts.append(f'<text x="{_f(left + wbar + 4)}" y="{y0 + j * row + 11}" font-size="10" {FONT}>{k.upper()}: {n}</text>')
    parts.append("</svg>")
    return "".join(parts)


def hour_chart(report: dict[str, Any], width: int = 640) -> str:
    """Trials started per UTC hour, both runs."""
    h = 120
    left, bottom = 30, 24
    wa = report["runs"]["a"].get("window") or {}
    wb = report["runs"]["b"].get("window") or {}
    ha = wa.get("trials_by_hour_utc") or [0] * 24
    hb = wb.get("trials_by_hour_utc") or [0] * 24
    mx = max(max(ha), max(hb), 1)
    bw = (width - left - 10) / 24
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {h}" width="{width}" height="{h}" role="img" aria-label="trials by hour">']
    for i in range(24):
        for j, (vals, key) in enumerate(((ha, "a"), (hb, "b"))):
            bh = (h - bottom - 20) * vals[i] / mx
            parts.append(
                f'<rect x="{_f(left + i * bw + j * bw / 2)}" y="{_f(h - bottom - bh)}" width="{_f(bw / 2 - 1)}" height="{_f(bh)}" fill="{COLORS[key]}"/>'
            )
        if i % 3 == 0:
            parts.append(f'<text x="{_f(left + i * bw)}" y="{h - 8}" font-size="10" {FONT}>{i:02d}h</text>')
    parts.append(f'<text x="{left}" y="14" font-size="12" {FONT}>Trials started per hour (UTC): A blue, B green</text>')
    parts.append("</svg>")
    return "".join(parts)
