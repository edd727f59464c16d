//! What the match layer costs per action (docs/match.md; bar in
//! docs/performance.md: at most 20% over the same game without `match`).
//!
//! One game, two rooms: a button each seat presses in turn, a Lua guard
//! (`can_press`) and handler (`on_button_pressed`) on every press. The
//! match room adds the `match` config:
//! a decision limit, a phase with its tools, a metered resource — so each
//! press goes through the schema check, the phase's tools, metering, the
//! book's update (phase, participation, clocks) and its hash. Input is the
//! CLI's: one JSON line per action, with `at`.
//!
//! Twice: with the game's match functions (`current_phase`,
//! `participation`, `is_terminal`) answered in Lua — which the match room
//! asks after every accepted action — and without them (the defaults:
//! participation from open prompts), which is the layer's own cost.

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use digipology_room::jsonl::Line;
use digipology_room::{build_room, Package, Room};
use serde_json::json;

const RULES: &str = r#"
function can_press(player, button)
  return game.seat_of(player) == (storage.turn or "a")
end

function on_button_pressed(event)
  game.entity("count"):add(1)
  storage.turn = (storage.turn or "a") == "a" and "b" or "a"
end
"#;

/// The game's answers to the match layer, in Lua.
const MATCH_FUNCTIONS: &str = r#"
function current_phase() return "play" end

function participation(seat)
  return seat == (storage.turn or "a") and "acting" or "waiting"
end

function is_terminal() return false end
"#;

fn game_dir(with_match: bool, functions: bool) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "digipology-bench-match-{}-{with_match}-{functions}",
        std::process::id()
    ));
    let _ = std::fs::create_dir_all(dir.join("scripts"));
    let mut game = json!({
        "id": "bench", "seats": ["a", "b"],
        "entities": [
            {"id": "tick", "components": {"button": {}}},
            {"id": "count", "components": {"counter": {"value": 0}}}
        ],
        "scripts": [{"id": "main", "file": "scripts/main.lua", "bindings": [{"id": "global"}]}]
    });
    if with_match {
        game["match"] = json!({
            "timing": {"playerTotalMs": 100_000_000_000_i64, "decisionLimitMs": 60_000, "clockVisibility": "public"},
            "resources": {"retries": {"amount": 3, "reset": "decision", "visibility": "private"}},
            "metering": {"invalidAction": {"resource": "retries", "cost": 1}},
            "phases": {"play": ["button.press"]}
        });
    }
    let _ = std::fs::write(dir.join("game.json"), game.to_string());
    let script = if functions {
        format!("{RULES}{MATCH_FUNCTIONS}")
    } else {
        RULES.to_owned()
    };
    let _ = std::fs::write(dir.join("scripts/main.lua"), script);
    dir
}

fn room(with_match: bool, functions: bool) -> Room {
    let package = Package::load(&game_dir(with_match, functions)).expect("bench game loads");
    let mut room = build_room(&package, 1, (None, None)).expect("bench room builds");
    let mut sink = std::io::sink();
    room.start(&mut sink).expect("starts");
    room.seat_players(
        &["pa".into(), "pb".into()],
        &["a".into(), "b".into()],
        &mut sink,
    )
    .expect("seats");
    assert_eq!(room.match_layer().is_some(), with_match);
    room
}

/// Presses by alternating seats, one millisecond apart, from `at`.
fn presses(from: i64, n: usize) -> Vec<Line> {
    (0..n)
        .map(|i| {
            let player = if i % 2 == 0 { "pa" } else { "pb" };
            let at = from + i64::try_from(i).unwrap_or(0);
            Line::Bytes(format!(
                r#"{{"type":"button.press","source":{{"kind":"player","playerId":"{player}"}},"payload":{{"entityId":"tick"}},"at":{at}}}"#
            ).into_bytes())
        })
        .collect()
}

fn matches(c: &mut Criterion) {
    let mut group = c.benchmark_group("match_layer");
    const BATCH: usize = 1000;
    group.throughput(Throughput::Elements(BATCH as u64));
    for (functions, with_match) in [(true, false), (true, true), (false, false), (false, true)] {
        let name = format!(
            "{}/{}",
            if functions {
                "lua_answers"
            } else {
                "default_answers"
            },
            if with_match {
                "with_match"
            } else {
                "without_match"
            }
        );
        let mut r = room(with_match, functions);
        let mut at = 1;
        let mut sink = std::io::sink();
        group.bench_function(&name, |b| {
            b.iter(|| {
                for line in presses(at, BATCH) {
                    r.submit_line(&line, &mut sink).expect("runs");
                }
                at += i64::try_from(BATCH).unwrap_or(0);
            });
        });
        assert_eq!(r.rejected, 0, "every press is accepted");
    }
    group.finish();
}

criterion_group!(benches, matches);
criterion_main!(benches);
