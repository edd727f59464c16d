//! `report.html` of `digipology simulate` (docs/simulate.md, The report):
//! one self-contained page — inline CSS and inline SVG charts, nothing
//! fetched — drawn from the JSON report. Every text from a game (script
//! messages, seat names) is escaped.

use std::fmt::Write as _;

use serde_json::Value;

/// Escapes text for HTML.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A value as text (strings bare).
fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

const STYLE: &str = "body{font:15px/1.4 system-ui,sans-serif;margin:0;background:#f4f1ea;color:#1f2328}\
main{max-width:960px;margin:0 auto;padding:16px}h1{font-size:22px}h2{font-size:17px;margin-top:28px}\
section{background:#fffdf8;border:1px solid #ddd;border-radius:8px;padding:12px 16px;margin:12px 0}\
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:4px 8px;border-bottom:1px solid #eee;vertical-align:top}\
th{color:#5c6470;font-weight:600}.num{text-align:right;font-variant-numeric:tabular-nums}\
.bad{color:#b3261e;font-weight:600}.muted{color:#5c6470}svg{max-width:100%;height:auto}\
svg text{font:12px system-ui,sans-serif;fill:#1f2328}.bar{fill:#2f6b4f}.draw{fill:#d9c27c}.ci{stroke:#1f2328;stroke-width:2}\
.hist{fill:#1f5fbf}.rej{fill:#b3261e}";

/// The whole page.
pub fn page(report: &Value) -> String {
    let mut out = String::new();
    let game = esc(&text(&report["game"]));
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>simulate: {game}</title><style>{STYLE}</style></head><body><main>"
    );
    let _ = write!(
        out,
        "<h1>{game}: {} matches</h1><p class=\"muted\">seed {} · bots {} · at most {} bot moves and clock jumps a match · bots take {} ms · ended: {}</p>",
        report["matches"],
        report["seed"],
        esc(&report["bots"].to_string()),
        report["maxActions"],
        report["thinkMs"],
        esc(&report["statuses"].to_string())
    );
    let lowest = report["scoring"].as_str() == Some("lowestWins");
    seats(&mut out, &report["seats"], lowest);
    lengths(&mut out, &report["length"]);
    rejections(&mut out, &report["rejections"]);
    errors(&mut out, report);
    expiries(&mut out, &report["expiries"]);
    safe_defaults(&mut out, &report["safeDefaults"]);
    matches(&mut out, report);
    out.push_str("</main></body></html>\n");
    out
}

/// Win rates as bars with their 95 % intervals, and a table with each
/// seat's scores; `lowest`: the lowest score wins.
fn seats(out: &mut String, seats: &Value, lowest: bool) {
    let Some(rows) = seats.as_object() else {
        return;
    };
    let (w, row_h) = (640.0, 34.0);
    let h = row_h * f64::from(u32::try_from(rows.len()).unwrap_or(0)) + 30.0;
    let _ = write!(out, "<section><h2>Who wins</h2><svg viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"win rates\">");
    let x0 = 90.0;
    let scale = w - x0 - 20.0;
    for (i, (seat, r)) in rows.iter().enumerate() {
        let y = 10.0 + row_h * f64::from(u32::try_from(i).unwrap_or(0));
        let rate = r["winRate"].as_f64().unwrap_or(0.0);
        let draw = r["drawRate"].as_f64().unwrap_or(0.0);
        let (lo, hi) = (
            r["winRate95"][0].as_f64().unwrap_or(0.0),
            r["winRate95"][1].as_f64().unwrap_or(0.0),
        );
        let _ = write!(
            out,
            "<text x=\"0\" y=\"{}\">{}</text><rect class=\"bar\" x=\"{x0}\" y=\"{y}\" width=\"{:.1}\" height=\"20\"><title>wins {rate}</title></rect><rect class=\"draw\" x=\"{:.1}\" y=\"{y}\" width=\"{:.1}\" height=\"20\"><title>draws {draw}</title></rect><line class=\"ci\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{}\" y2=\"{}\"/>",
            y + 15.0,
            esc(seat),
            rate * scale,
            x0 + rate * scale,
            draw * scale,
            x0 + lo * scale,
            x0 + hi * scale,
            y + 10.0,
            y + 10.0
        );
    }
    let _ = write!(
        out,
        "<text x=\"{x0}\" y=\"{}\">0</text><text x=\"{}\" y=\"{}\">1</text></svg>",
        h - 4.0,
        x0 + scale - 8.0,
        h - 4.0
    );
    let _ = write!(
        out,
        "<p class=\"muted\">{} Green: win rate, with its 95 % interval; gold: draws.</p><table><tr><th>seat</th><th class=\"num\">wins</th><th class=\"num\">draws</th><th class=\"num\">losses</th><th class=\"num\">win rate</th><th>95 % interval</th><th class=\"num\">mean score</th><th class=\"num\">sd</th><th>range</th></tr>",
        if lowest {
            "The lowest score wins."
        } else {
            "The highest score wins."
        }
    );
    for (seat, r) in rows {
        let s = &r["score"];
        let score = if s.is_null() {
            "<td class=\"num\">–</td><td class=\"num\">–</td><td>–</td>".to_owned()
        } else {
            format!(
                "<td class=\"num\">{}</td><td class=\"num\">{}</td><td>{} – {}</td>",
                s["mean"], s["sd"], s["min"], s["max"]
            )
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{} – {}</td>{score}</tr>",
            esc(seat), r["wins"], r["draws"], r["losses"], r["winRate"], r["winRate95"][0], r["winRate95"][1]
        );
    }
    out.push_str("</table></section>");
}

/// The two length histograms.
fn lengths(out: &mut String, length: &Value) {
    out.push_str("<section><h2>How long</h2>");
    for (key, what) in [
        ("actions", "bot moves and clock jumps per match"),
        ("virtualMs", "virtual time per match (ms)"),
    ] {
        histogram(out, &length[key], what);
    }
    out.push_str("</section>");
}

fn histogram(out: &mut String, spread: &Value, what: &str) {
    let counts: Vec<u64> = spread["histogram"]["counts"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let most = counts.iter().copied().max().unwrap_or(0).max(1);
    let from = spread["histogram"]["from"].as_i64().unwrap_or(0);
    let width = spread["histogram"]["binWidth"].as_i64().unwrap_or(1);
    let _ = write!(
        out,
        "<h3>{}</h3><svg viewBox=\"0 0 640 150\" role=\"img\" aria-label=\"{}\">",
        esc(what),
        esc(what)
    );
    for (i, n) in counts.iter().enumerate() {
        let i = i64::try_from(i).unwrap_or(0);
        // Counts far below 2^52: exact as doubles.
        #[allow(clippy::cast_precision_loss)]
        let bar = 110.0 * (*n as f64) / (most as f64);
        #[allow(clippy::cast_precision_loss)]
        let x = 10.0 + 62.0 * i as f64;
        let lo = from.saturating_add(i.saturating_mul(width));
        let _ = write!(
            out,
            "<rect class=\"hist\" x=\"{x}\" y=\"{:.1}\" width=\"56\" height=\"{bar:.1}\"><title>{lo}–{}: {n}</title></rect><text x=\"{x}\" y=\"145\">{lo}</text>",
            120.0 - bar,
            lo.saturating_add(width).saturating_sub(1)
        );
    }
    if spread["min"] == spread["max"] {
        let _ = write!(
            out,
            "</svg><p class=\"muted\">every match: {}</p>",
            spread["min"]
        );
        return;
    }
    let _ = write!(
        out,
        "</svg><p class=\"muted\">min {}, median {}, p90 {}, max {}</p>",
        spread["min"], spread["median"], spread["p90"], spread["max"]
    );
}

/// Rejections by action type and code.
fn rejections(out: &mut String, rejections: &Value) {
    out.push_str("<section><h2>Refused actions</h2>");
    let rows: Vec<(String, String, u64)> = rejections
        .as_object()
        .map(|by_type| {
            by_type
                .iter()
                .flat_map(|(t, codes)| {
                    codes
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(move |(c, n)| (t.clone(), c.clone(), n.as_u64().unwrap_or(0)))
                })
                .collect()
        })
        .unwrap_or_default();
    if rows.is_empty() {
        out.push_str("<p class=\"muted\">none</p></section>");
        return;
    }
    let most = rows.iter().map(|r| r.2).max().unwrap_or(1).max(1);
    out.push_str(
        "<table><tr><th>action</th><th>code</th><th class=\"num\">times</th><th></th></tr>",
    );
    for (t, c, n) in rows {
        // Counts far below 2^52: exact as doubles.
        #[allow(clippy::cast_precision_loss)]
        let w = 200.0 * n as f64 / most as f64;
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{n}</td><td><svg viewBox=\"0 0 200 12\" width=\"200\" height=\"12\"><rect class=\"rej\" width=\"{w:.1}\" height=\"12\"/></svg></td></tr>",
            esc(&t),
            esc(&c)
        );
    }
    out.push_str("</table></section>");
}

/// Script errors by file:line, then failing match functions.
fn errors(out: &mut String, report: &Value) {
    faults(out, report);
    out.push_str("<section><h2>Script errors</h2>");
    let list = report["scriptErrors"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if list.is_empty() {
        out.push_str("<p class=\"muted\">none</p></section>");
        return;
    }
    out.push_str("<table><tr><th>where</th><th class=\"num\">times</th><th class=\"num\">matches</th><th>first message</th><th class=\"num\">first seed</th></tr>");
    for e in list {
        let _ = write!(
            out,
            "<tr><td class=\"bad\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
            esc(&text(&e["at"])), e["count"], e["matches"], esc(&text(&e["message"])), e["firstSeed"]
        );
    }
    out.push_str("</table></section>");
}

/// Match functions (`score`, `participation`, …) that failed.
fn faults(out: &mut String, report: &Value) {
    let list = report["gameFaults"].as_array().cloned().unwrap_or_default();
    if list.is_empty() {
        return;
    }
    out.push_str("<section><h2>Match functions that failed</h2><table><tr><th>what the room said</th><th class=\"num\">times</th><th class=\"num\">matches</th><th class=\"num\">first seed</th></tr>");
    for f in list {
        let _ = write!(
            out,
            "<tr><td class=\"bad\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&text(&f["message"])), f["count"], f["matches"], f["firstSeed"]
        );
    }
    out.push_str("</table></section>");
}

/// The match's host events (clocks that ran out, phases that ended,
/// retries used up) by kind and seat.
fn expiries(out: &mut String, expiries: &Value) {
    out.push_str("<section><h2>Clocks, phases and retries</h2>");
    let Some(kinds) = expiries.as_object().filter(|k| !k.is_empty()) else {
        out.push_str("<p class=\"muted\">none</p></section>");
        return;
    };
    out.push_str("<table><tr><th>event</th><th>seat</th><th class=\"num\">times</th></tr>");
    for (kind, seats) in kinds {
        for (seat, n) in seats.as_object().into_iter().flatten() {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{n}</td></tr>",
                esc(kind),
                esc(seat)
            );
        }
    }
    out.push_str("</table></section>");
}

/// The safe defaults the room played for each seat.
fn safe_defaults(out: &mut String, seats: &Value) {
    out.push_str("<section><h2>Safe defaults the room played</h2>");
    let Some(seats) = seats.as_object().filter(|s| !s.is_empty()) else {
        out.push_str("<p class=\"muted\">none</p></section>");
        return;
    };
    out.push_str(
        "<table><tr><th>seat</th><th class=\"num\">times</th><th class=\"num\">matches</th></tr>",
    );
    for (seat, s) in seats {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(seat),
            s["times"],
            s["matches"]
        );
    }
    out.push_str("</table></section>");
}

/// The longest matches and the failed ones, with their records.
fn matches(out: &mut String, report: &Value) {
    out.push_str("<section><h2>Longest matches</h2><table><tr><th class=\"num\">seed</th><th class=\"num\">moves and jumps</th><th class=\"num\">virtual ms</th><th>ended</th></tr>");
    for m in report["longest"].as_array().into_iter().flatten() {
        let _ = write!(
            out,
            "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            m["seed"], m["actions"], m["virtualMs"], esc(&text(&m["status"]))
        );
    }
    let _ = write!(
        out,
        "</table></section><section><h2>Failed matches ({})</h2>",
        report["failedCount"]
    );
    let failed = report["failed"].as_array().cloned().unwrap_or_default();
    if failed.is_empty() {
        out.push_str("<p class=\"muted\">none</p></section>");
        return;
    }
    out.push_str("<table><tr><th class=\"num\">seed</th><th>ended</th><th>script errors</th><th>record</th></tr>");
    for f in failed {
        let record = f["record"].as_str().map_or_else(String::new, |r| {
            format!("<a href=\"{}\">{}</a>", esc(r), esc(r))
        });
        let _ = write!(
            out,
            "<tr><td class=\"num\">{}</td><td>{}</td><td class=\"bad\">{}</td><td>{record}</td></tr>",
            f["seed"], esc(&text(&f["status"])), esc(&f["scriptErrors"].to_string())
        );
    }
    out.push_str("</table></section>");
}
