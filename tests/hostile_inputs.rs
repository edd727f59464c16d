//! Hostile inputs around the room: files outside the game folder, a
//! container cycle, far `at` values with a re-arming timer, records whose
//! actions look like raw lines, and broken lines on `watch`'s standard
//! input. Each is a clear error or a bounded amount of work, never a hang,
//! a crash or a false divergence.

mod common;

use std::io::Write;
use std::process::Stdio;

use common::*;
use serde_json::json;

fn game_with_script(test: &str, file: &str) -> std::path::PathBuf {
    let dir = scratch(test);
    let game = dir.join("g");
    std::fs::create_dir_all(game.join("scripts")).expect("mkdir");
    write(
        &game,
        "game.json",
        json!({"id": "g", "seats": ["a"], "entities": [{"id": "b", "components": {"button": {}}}],
               "scripts": [{"id": "main", "file": file}]})
        .to_string()
        .as_bytes(),
    );
    game
}

/// A game whose one script is `scripts/main.lua` with `source`; also the
/// scratch folder holding it.
fn game_with_main(test: &str, source: &[u8]) -> (std::path::PathBuf, std::path::PathBuf) {
    let game = game_with_script(test, "scripts/main.lua");
    write(&game, "scripts/main.lua", source);
    let dir = game.parent().expect("dir").to_path_buf();
    (game, dir)
}

/// Rule: a script `file` is a path inside the game folder; anything else
/// (an absolute path, `..`, a device, a link leading out) is refused by
/// `run` and `check` before it is opened — `/dev/stdin` would run Lua from
/// the host's input, `/dev/zero` would never end.
#[test]
fn script_files_outside_the_game_folder_are_refused() {
    for file in [
        "../../etc/passwd",
        "/etc/passwd",
        "/dev/stdin",
        "/dev/zero",
        "scripts/../../x.lua",
    ] {
        let game = game_with_script("outside", file);
        let g = game.to_str().expect("path");
        let out = run(&["run", g], b"print('from stdin')\n");
        assert_eq!(out.status.code(), Some(2), "{file}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("inside the game folder"), "{file}: {err}");
        assert_no_panic(&out);
        let check = run(&["check", g], b"");
        assert_eq!(check.status.code(), Some(1), "{file}");
        assert!(String::from_utf8_lossy(&check.stdout).contains("inside the game folder"));
    }
    // A link inside the folder that leads to a device.
    let game = game_with_script("outside-link", "scripts/evil.lua");
    std::os::unix::fs::symlink("/dev/zero", game.join("scripts/evil.lua")).expect("symlink");
    let out = run(&["run", game.to_str().expect("path")], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("outside the game folder"));
}

/// Rule: a container cycle in `game.json` does not load (it used to, and
/// later moves got a wrong `container_cycle` rejection).
#[test]
fn a_container_cycle_in_game_json_is_refused() {
    let dir = scratch("cycle");
    write(
        &dir,
        "game.json",
        br#"{"entities": [
            {"id": "a", "components": {"container": {"items": ["b"]}}},
            {"id": "b", "components": {"container": {"items": ["c"]}}},
            {"id": "c", "components": {"container": {"items": ["a"]}}}]}"#,
    );
    let out = run(&["run", dir.to_str().expect("path")], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("container cycle"), "{err}");
    assert_no_panic(&out);
}

/// Rule: one catch-up fires at most `--max-end-fires` timers, so an action
/// with a far `at` in a room whose timer re-arms itself every millisecond
/// is served after a bounded amount of work; the rest stay pending.
#[test]
fn a_far_at_with_a_rearming_timer_is_bounded() {
    let (game, dir) = game_with_main("catch-up", b"function on_start(e) timer.after(1, 'tick') end\nfunction tick() storage.n = (storage.n or 0) + 1 timer.after(1, 'tick') end\n");
    let actions = write(
        &dir,
        "far.jsonl",
        br#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"p"},"at":0}
{"type":"button.press","source":{"kind":"player","playerId":"p"},"payload":{"entityId":"b"},"at":1700000000000}
"#,
    );
    let out = run(
        &[
            "run",
            game.to_str().expect("path"),
            "--actions",
            actions.to_str().expect("path"),
            "--format",
            "jsonl",
            "--max-end-fires",
            "200",
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let evs = events(&out);
    let fires = evs.iter().filter(|e| e["type"] == "timer.fired").count();
    assert!(
        fires <= 400,
        "{fires} fires for one far action and the end of input"
    );
    assert!(
        evs.iter().any(|e| e["type"] == "button.pressed"),
        "the far action was served"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in one catch-up"), "{err}");
}

/// Rule: a record replays exactly what was processed: an action whose
/// envelope carries a `raw` key (malformed, rejected) is not replayed as
/// the line inside it.
#[test]
fn an_action_with_a_raw_key_replays_as_itself() {
    let dir = scratch("raw-key");
    let inner = r#"{"type":"counter.add","source":{"kind":"player","playerId":"ann"},"payload":{"entityId":"score_north","amount":5}}"#;
    let tricky = json!({"type": "counter.add", "source": {"kind": "player", "playerId": "ann"},
                        "payload": {"entityId": "score_north", "amount": 1}, "raw": inner});
    let text = format!(
        "{}\n{}\nnot json at all\n",
        r#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"ann"}}"#,
        tricky
    );
    let (out, record, replay) = record_and_replay(&dir, "examples/basics", text.as_bytes(), &[]);
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{said}");
    assert!(said.contains("every state hash matches"), "{said}");
    // The raw line is recorded as such, the tricky action as an action.
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&record)
        .expect("record")
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert!(lines.iter().any(|l| l["raw"] == "not json at all"));
    assert!(lines.iter().any(|l| l["action"]["raw"] == inner));
}

/// Rule: `watch` reads standard input like `run`: a non-UTF-8 line is a
/// malformed action and the next line is still served (it used to end all
/// further input).
#[test]
fn watch_keeps_reading_after_a_non_utf8_line() {
    let dir = scratch("watch-bytes");
    let game = dir.join("basics");
    copy_dir(&root().join("examples/basics"), &game);
    let mut child = bin()
        .args(["watch", game.to_str().expect("path")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"\xff\xfe not utf-8\n").expect("write");
    writeln!(stdin, r#"{{"type":"counter.add","source":{{"kind":"player","playerId":"p1"}},"payload":{{"entityId":"score_north","amount":4}}}}"#).expect("write");
    stdin.flush().expect("flush");
    let seen = lines_until(child.stdout.take().expect("stdout"), "counter.changed");
    let _ = child.kill();
    let _ = child.wait();
    assert!(seen.iter().any(|l| l.contains("not UTF-8")), "{seen:#?}");
    assert!(
        seen.iter().any(|l| l.contains("counter.changed")),
        "{seen:#?}"
    );
}

/// Rule: a record carries the limits it ran under, so a room that ran out
/// of budget under `--instructions-max` replays identically (it used to
/// replay with the default budget and report a false divergence).
#[test]
fn a_record_replays_under_its_own_limits() {
    let (game, dir) = game_with_main("record-limits", b"function on_button_pressed(e) local n = 0 for i = 1, 20000 do n = n + i end storage.n = n end\n");
    let actions =
        br#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"p"}}
{"type":"button.press","source":{"kind":"player","playerId":"p"},"payload":{"entityId":"b"}}
"#;
    let (out, _, replay) = record_and_replay(
        &dir,
        game.to_str().expect("path"),
        actions,
        &["--instructions-max", "5000"],
    );
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"kind\":\"budget\""),
        "the press ran out of budget"
    );
    let said = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{said}");
}

/// Rule: a `scripts` folder that is a link leading out of the game folder
/// offers no modules: `require` cannot read files outside the game.
#[test]
fn a_linked_scripts_folder_cannot_leak_files() {
    let dir = scratch("linked-scripts");
    let outside = dir.join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    write(&outside, "leak.lua", b"return 'SECRET'\n");
    let game = dir.join("g");
    std::fs::create_dir_all(game.join("rules")).expect("mkdir");
    std::os::unix::fs::symlink(&outside, game.join("scripts")).expect("symlink");
    write(
        &game,
        "game.json",
        json!({"id": "g", "seats": ["a"], "entities": [{"id": "b", "components": {"button": {}}}],
               "scripts": [{"id": "main", "file": "rules/main.lua"}]})
        .to_string()
        .as_bytes(),
    );
    write(
        &game,
        "rules/main.lua",
        b"function on_button_pressed(e) storage.got = require('leak') end\n",
    );
    let actions = write(
        &dir,
        "a.jsonl",
        br#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"p"}}
{"type":"button.press","source":{"kind":"player","playerId":"p"},"payload":{"entityId":"b"}}
"#,
    );
    let out = run(
        &[
            "run",
            game.to_str().expect("path"),
            "--actions",
            actions.to_str().expect("path"),
            "--format",
            "jsonl",
        ],
        b"",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("SECRET"), "{text}");
    assert!(
        text.contains("require can only load the game's own scripts"),
        "{text}"
    );
}

/// Rule: whatever `run` accepts, its record replays. The deepest action a
/// line may hold (127 levels: 128 or more is `malformed_action`) sits one
/// level deeper inside its record line, and the replay still reads it.
#[test]
fn the_deepest_accepted_action_replays_from_its_record() {
    let dir = scratch("deep-record");
    let depth_of = |levels: usize| {
        let arrays = levels - 2;
        format!(
            "{{\"type\":\"counter.add\",\"source\":{{\"kind\":\"system\"}},\"payload\":{{\"x\":{}{}}}}}\n",
            "[".repeat(arrays),
            "]".repeat(arrays)
        )
    };
    let actions = format!("{}{}", depth_of(127), depth_of(128));
    let (out, _, replay) = record_and_replay(&dir, "examples/basics", actions.as_bytes(), &[]);
    assert!(out.status.success());
    let events = String::from_utf8_lossy(&out.stdout);
    // 127 levels is read (and refused for its source), 128 is malformed.
    assert!(events.contains("source_not_allowed"), "{events}");
    assert!(events.contains("recursion limit exceeded"), "{events}");
    let said = String::from_utf8_lossy(&replay.stdout);
    assert!(
        replay.status.success(),
        "{said} {}",
        String::from_utf8_lossy(&replay.stderr)
    );
}

/// Runs `game` on `actions` (and `extra` flags) with a record, then replays
/// it: the run's output, the record's path and the replay's output.
fn record_and_replay(
    dir: &std::path::Path,
    game: &str,
    actions: &[u8],
    extra: &[&str],
) -> (
    std::process::Output,
    std::path::PathBuf,
    std::process::Output,
) {
    let actions = write(dir, "a.jsonl", actions);
    let record = dir.join("rec.jsonl");
    let mut args = vec![
        "run",
        game,
        "--actions",
        actions.to_str().expect("path"),
        "--record",
        record.to_str().expect("path"),
        "--format",
        "jsonl",
    ];
    args.extend_from_slice(extra);
    let out = run(&args, b"");
    let replay = run(&["replay", record.to_str().expect("path")], b"");
    (out, record, replay)
}
