//! The room clock and timer delivery, end to end: due timers fire in due
//! time then id order, before later actions and at the end of the input; a
//! turn timer's default is applied by its callback; replaying the recorded
//! stream reproduces the state hash after every step.

mod common;

use common::*;
use serde_json::{json, Value};

fn timer_game(dir: &std::path::Path, script: &str) {
    std::fs::create_dir_all(dir.join("scripts")).expect("dirs");
    write(dir, "scripts/main.lua", script.as_bytes());
    write(
        dir,
        "game.json",
        br#"{"seats": ["a"], "entities": [{"id": "log", "components": {"text": {}}}],
            "scripts": [{"id": "main", "file": "scripts/main.lua"}]}"#,
    );
}

const THREE_TIMERS: &str = r#"
function on_start(event)
  timer.after(100, "fired", "b")   -- timer_0_1, due 100
  timer.after(50, "fired", "a")    -- timer_0_2, due 50
  timer.after(100, "fired", "c")   -- timer_0_3, due 100 (same time: id order)
end
function fired(data, event)
  local log = game.entity("log")
  log:set_text(log.text .. data)
end
"#;

fn fired_order(out: &std::process::Output) -> Vec<String> {
    events(out)
        .iter()
        .filter(|e| e["type"] == "timer.fired")
        .map(|e| e["data"]["timerId"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn pending_timers_fire_at_the_end_in_due_time_then_id_order() {
    let dir = scratch("timers-end");
    timer_game(&dir, THREE_TIMERS);
    let out = run(&["run", dir.to_str().unwrap_or_default()], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        fired_order(&out),
        vec!["timer_0_2", "timer_0_1", "timer_0_3"]
    );
    let text = events(&out)
        .iter()
        .rfind(|e| e["type"] == "text.changed")
        .map(|e| e["data"]["value"].clone());
    assert_eq!(text, Some(json!("abc")));
}

#[test]
fn due_timers_fire_before_an_action_with_a_later_at() {
    let dir = scratch("timers-at");
    timer_game(&dir, THREE_TIMERS);
    let actions = write(
        &dir,
        "a.jsonl",
        br#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"late"},"at":75}"#,
    );
    let out = run(
        &[
            "run",
            dir.to_str().unwrap_or_default(),
            "--actions",
            actions.to_str().unwrap_or_default(),
        ],
        b"",
    );
    let types: Vec<String> = events(&out)
        .iter()
        .map(|e| {
            format!(
                "{}:{}",
                e["type"].as_str().unwrap_or(""),
                e["data"]["timerId"].as_str().unwrap_or("")
            )
        })
        .filter(|t| t.starts_with("timer.fired") || t.starts_with("player.joined"))
        .collect();
    assert_eq!(
        types,
        vec![
            "timer.fired:timer_0_2",
            "player.joined:",
            "timer.fired:timer_0_1",
            "timer.fired:timer_0_3"
        ]
    );
}

#[test]
fn a_canceled_timer_never_fires() {
    let dir = scratch("timers-cancel");
    timer_game(
        &dir,
        r#"
        function on_start(event)
          local id = timer.after(10, "fired")
          timer.after(20, "fired")
          timer.cancel(id)
        end
        function fired(data, event) game.entity("log"):set_text(event.data.timerId) end
    "#,
    );
    let out = run(&["run", dir.to_str().unwrap_or_default()], b"");
    assert_eq!(fired_order(&out), vec!["timer_0_2"]);
}

#[test]
fn a_game_that_rearms_forever_stops_at_the_bound() {
    let dir = scratch("timers-forever");
    timer_game(
        &dir,
        r#"
        function on_start(event) timer.after(1, "again") end
        function again(data, event) timer.after(1, "again") end
    "#,
    );
    let out = run(
        &[
            "run",
            dir.to_str().unwrap_or_default(),
            "--max-end-fires",
            "50",
        ],
        b"",
    );
    assert!(out.status.success());
    assert_eq!(fired_order(&out).len(), 50);
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopped after 50 timer fires"));
}

#[test]
fn a_turn_timer_applies_the_default_and_the_record_replays_hash_for_hash() {
    let dir = scratch("turn-timer");
    let record = dir.join("record.jsonl");
    let game = root().join("examples/push-your-luck");
    let actions = game.join("actions.jsonl");
    let out = run(
        &[
            "run",
            game.to_str().unwrap_or_default(),
            "--actions",
            actions.to_str().unwrap_or_default(),
            "--record",
            record.to_str().unwrap_or_default(),
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    // The turn timer expired: the prompt was canceled by the callback and
    // the safe default (hold) applied.
    assert!(ev.iter().any(|e| e["type"] == "prompt.canceled"));
    assert!(ev.iter().any(|e| e["type"] == "text.changed"
        && e["data"]["value"]
            .as_str()
            .unwrap_or("")
            .contains("ran out of time and holds")));
    assert!(ev.iter().all(|e| e["type"] != "script.error"));

    // Replay: feed the recorded actions back in; every hash must match.
    let original = std::fs::read_to_string(&record).expect("record written");
    let lines: Vec<Value> = original
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("record line"))
        .collect();
    assert!(lines.len() > 10);
    let replay_actions: String = lines.iter().map(|l| format!("{}\n", l["action"])).collect();
    let replay_input = write(&dir, "replay.jsonl", replay_actions.as_bytes());
    let replay_record = dir.join("replay-record.jsonl");
    let again = run(
        &[
            "run",
            game.to_str().unwrap_or_default(),
            "--actions",
            replay_input.to_str().unwrap_or_default(),
            "--record",
            replay_record.to_str().unwrap_or_default(),
        ],
        b"",
    );
    assert!(again.status.success());
    let replayed = std::fs::read_to_string(&replay_record).expect("replay record");
    // Line 0 is the header (game path, seed, starting digest): the game paths differ.
    for (i, (a, b)) in original.lines().zip(replayed.lines()).enumerate().skip(1) {
        assert_eq!(a, b, "the replay diverged at record line {i}");
    }
    assert_eq!(original.lines().count(), replayed.lines().count());
    assert_eq!(
        out.stdout, again.stdout,
        "the replayed event stream differs"
    );
}
