//! What a creator and a designer hit first: save games that resume hash for
//! hash, `check` agreeing with `run`, no state left behind by canceled
//! timers, and the scenario assertions card games need.

mod common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn ok(out: &std::process::Output) -> String {
    assert_no_panic(out);
    assert!(
        out.status.success(),
        "exit {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn state_hash(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    text.rsplit("state hash ")
        .next()
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// Rule: a room saved after any line and resumed with the rest of the
/// stream produces the same events, final state bytes and state hash as the
/// uninterrupted run (run --save / --resume: a save game).
#[test]
fn a_resumed_room_continues_hash_for_hash() {
    let dir = scratch("resume");
    let mut splits_tried = 0;
    for game in [
        "basics",
        "high-card",
        "push-your-luck",
        "patience",
        "tic-tac-toe",
    ] {
        let g = root().join("examples").join(game);
        let lines = stream_of(&g);
        assert!(lines.len() >= 4, "{game}: no stream to split");
        let full_state = dir.join(format!("{game}-full.json"));
        let full_actions = write(
            &dir,
            &format!("{game}-all.jsonl"),
            (lines.join("\n") + "\n").as_bytes(),
        );
        let full = run(
            &[
                "run",
                s(&g),
                "--actions",
                s(&full_actions),
                "--format",
                "jsonl",
                "--state-out",
                s(&full_state),
            ],
            b"",
        );
        let full_events = ok(&full);
        let full_hash = state_hash(&full.stderr);
        for k in 1..lines.len() {
            let first = write(
                &dir,
                &format!("{game}-{k}-a.jsonl"),
                (lines[..k].join("\n") + "\n").as_bytes(),
            );
            let rest = write(
                &dir,
                &format!("{game}-{k}-b.jsonl"),
                (lines[k..].join("\n") + "\n").as_bytes(),
            );
            let save = dir.join(format!("{game}-{k}.save.json"));
            let resumed_state = dir.join(format!("{game}-{k}-state.json"));
            let a = run(
                &[
                    "run",
                    s(&g),
                    "--actions",
                    s(&first),
                    "--format",
                    "jsonl",
                    "--save",
                    s(&save),
                ],
                b"",
            );
            let mut events = ok(&a);
            let b = run(
                &[
                    "run",
                    s(&g),
                    "--resume",
                    s(&save),
                    "--actions",
                    s(&rest),
                    "--format",
                    "jsonl",
                    "--state-out",
                    s(&resumed_state),
                ],
                b"",
            );
            events.push_str(&ok(&b));
            assert_eq!(
                events, full_events,
                "{game}: events differ when saved after line {k}"
            );
            assert_eq!(
                state_hash(&b.stderr),
                full_hash,
                "{game}: hash differs after resuming at line {k}"
            );
            assert_eq!(
                std::fs::read(&resumed_state).expect("state"),
                std::fs::read(&full_state).expect("state"),
                "{game}: final state bytes differ after resuming at line {k}"
            );
            splits_tried += 1;
        }
    }
    assert!(splits_tried >= 60, "only {splits_tried} splits were tried");
}

/// A game's action stream: its `actions.jsonl`, or — for a game without
/// one — the joins, seats and actions of its first scenario, with each
/// `advance` turned into `at` times.
fn stream_of(game: &Path) -> Vec<String> {
    if let Ok(text) = std::fs::read_to_string(game.join("actions.jsonl")) {
        return text.lines().map(str::to_owned).collect();
    }
    let mut files: Vec<_> = std::fs::read_dir(game.join("tests"))
        .expect("tests")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let scenario: Value =
        serde_json::from_slice(&std::fs::read(&files[0]).expect("scenario")).expect("json");
    let seats: Vec<Value> = {
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(game.join("game.json")).expect("game"))
                .expect("json");
        manifest["seats"].as_array().cloned().unwrap_or_default()
    };
    let system = |ty: &str, payload: Value| {
        json!({"type": ty, "source": {"kind": "system"}, "payload": payload, "at": 0}).to_string()
    };
    let mut out = Vec::new();
    for (i, p) in scenario["players"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        out.push(system("system.player_joined", json!({"playerId": p})));
        if let Some(seat) = seats.get(i) {
            out.push(system(
                "system.seat_assign",
                json!({"playerId": p, "seatId": seat}),
            ));
        }
    }
    let mut clock = 0i64;
    for step in scenario["steps"].as_array().cloned().unwrap_or_default() {
        clock += step["advance"].as_i64().unwrap_or(0);
        if let Some(action) = step.get("do") {
            let mut a = action.clone();
            a["at"] = json!(clock);
            out.push(a.to_string());
        }
    }
    out
}

/// Rule: a record made from a resumed room replays (the record carries the
/// resume point), and a save from another game or a bare state is refused
/// with a clear message, changing nothing.
#[test]
fn resumed_rooms_record_and_replay_and_bad_saves_are_refused() {
    let dir = scratch("resume-record");
    let g = root().join("examples/push-your-luck");
    let lines: Vec<String> = std::fs::read_to_string(g.join("actions.jsonl"))
        .expect("actions")
        .lines()
        .map(str::to_owned)
        .collect();
    let first = write(&dir, "a.jsonl", (lines[..4].join("\n") + "\n").as_bytes());
    let rest = write(&dir, "b.jsonl", (lines[4..].join("\n") + "\n").as_bytes());
    let save = dir.join("s.json");
    let state = dir.join("state.json");
    ok(&run(
        &[
            "run",
            s(&g),
            "--actions",
            s(&first),
            "--save",
            s(&save),
            "--state-out",
            s(&state),
            "--format",
            "jsonl",
        ],
        b"",
    ));
    let record = dir.join("rec.jsonl");
    ok(&run(
        &[
            "run",
            s(&g),
            "--resume",
            s(&save),
            "--actions",
            s(&rest),
            "--record",
            s(&record),
            "--format",
            "jsonl",
        ],
        b"",
    ));
    let replay = ok(&run(&["replay", s(&record)], b""));
    assert!(replay.contains("every state hash matches"), "{replay}");

    // A bare --state-out file is not a save game.
    let bare = run(
        &["run", s(&g), "--resume", s(&state), "--actions", s(&rest)],
        b"",
    );
    assert_eq!(bare.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bare.stderr);
    assert!(err.contains("not a save game"), "{err}");
    // Another game's save.
    let other = run(&["run", "examples/basics", "--resume", s(&save)], b"");
    assert_eq!(other.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&other.stderr).contains("push-your-luck"));
    // A save edited by hand is refused, naming the field: values that do
    // not write back the same bytes, and states no room could reach.
    let saved: Value = serde_json::from_slice(&std::fs::read(&save).expect("save")).expect("json");
    let timer = saved["timers"]
        .as_object()
        .and_then(|t| t.keys().next().cloned())
        .expect("the save has a pending turn timer");
    type Edit = Box<dyn Fn(&mut Value)>;
    let edits: Vec<(&str, Edit)> = vec![
        (
            "d6",
            Box::new(|d| d["state"]["entities"]["d6"]["components"]["die"]["value"] = json!(99)),
        ),
        (
            "heldBy",
            Box::new(|d| d["state"]["entities"]["d6"]["heldBy"] = json!("ghost")),
        ),
        (
            "seats",
            Box::new(|d| d["state"]["seats"]["north"] = json!("ghost")),
        ),
        (
            "state.sequence",
            Box::new(|d| d["state"]["sequence"] = json!(0)),
        ),
        ("state.timers", {
            let t = timer.clone();
            Box::new(move |d| d["state"]["timers"][&t]["status"] = json!("fired"))
        }),
        (
            "state.prompts",
            Box::new(|d| d["state"]["prompts"]["ask_1"] = json!({"x": 1})),
        ),
        (
            "no scheduled timer",
            Box::new(|d| d["timers"]["nope"] = json!(99999)),
        ),
    ];
    for (needle, change) in edits {
        let mut doc = saved.clone();
        change(&mut doc);
        let edited = write(&dir, "edited.json", doc.to_string().as_bytes());
        let out = run(&["run", s(&g), "--resume", s(&edited)], b"");
        assert_no_panic(&out);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{needle}: resumed anyway\n{err}"
        );
        assert!(err.contains(needle), "{needle}: {err}");
    }
}

/// Rule: a timer whose fire fails (its callback raises, so the fire is
/// rolled back) stays scheduled in the state but is never fired again; a
/// save taken after that resumes, and the resumed room matches one that
/// never stopped.
#[test]
fn a_save_after_a_failed_timer_fire_resumes() {
    let dir = scratch("failed-fire");
    let game = dir.join("boom");
    std::fs::create_dir_all(game.join("scripts")).expect("mkdir");
    write(
        &game,
        "game.json",
        br#"{"id": "boom", "seats": ["north"], "entities": [{"id": "btn", "components": {"button": {}}}, {"id": "n", "components": {"counter": {}}}],
            "scripts": [{"id": "main", "file": "scripts/main.lua"}]}"#,
    );
    write(
        &game,
        "scripts/main.lua",
        b"function on_start(e) storage.t = timer.after(100, 'boom') end
function boom() error('kaput') end
function on_button_pressed(e) game.entity('n'):add(1) end
",
    );
    let press = |at: u32| {
        format!(
            r#"{{"type":"button.press","source":{{"kind":"player","playerId":"p1"}},"payload":{{"entityId":"btn"}},"at":{at}}}"#
        )
    };
    let join =
        r#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"p1"}}"#;
    let all = write(
        &dir,
        "all.jsonl",
        format!("{join}\n{}\n{}\n", press(500), press(600)).as_bytes(),
    );
    let first = write(
        &dir,
        "a.jsonl",
        format!("{join}\n{}\n", press(500)).as_bytes(),
    );
    let rest = write(&dir, "b.jsonl", format!("{}\n", press(600)).as_bytes());
    let full = run(
        &["run", s(&game), "--actions", s(&all), "--format", "jsonl"],
        b"",
    );
    let full_events = ok(&full);
    assert!(
        full_events.contains("kaput"),
        "the fire fails: {full_events}"
    );
    let save = dir.join("s.json");
    let mut events = ok(&run(
        &[
            "run",
            s(&game),
            "--actions",
            s(&first),
            "--format",
            "jsonl",
            "--save",
            s(&save),
        ],
        b"",
    ));
    let b = run(
        &[
            "run",
            s(&game),
            "--resume",
            s(&save),
            "--actions",
            s(&rest),
            "--format",
            "jsonl",
        ],
        b"",
    );
    events.push_str(&ok(&b));
    assert_eq!(events, full_events);
    assert_eq!(state_hash(&b.stderr), state_hash(&full.stderr));
}

/// Rule: `check` fails whenever `run` cannot load the game: a syntax
/// error in a module loaded with `require`, and a bad `limits` field.
#[test]
fn check_agrees_with_run_on_required_modules_and_limits() {
    // A required module with a syntax error.
    let game = example_copy("check-require", "high-card");
    let main = game.join("scripts/main.lua");
    let src = std::fs::read_to_string(&main).expect("main");
    std::fs::write(&main, format!("local util = require(\"util\")\n{src}")).expect("write");
    std::fs::write(
        game.join("scripts/util.lua"),
        "local M = {}\nfunction M.f(\nreturn M\n",
    )
    .expect("write");
    let check = run(&["check", s(&game)], b"");
    let report = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{report}");
    assert!(
        report.contains("scripts/util.lua:3: syntax error"),
        "{report}"
    );
    let run_out = run(&["run", s(&game)], b"");
    assert_eq!(run_out.status.code(), Some(2));

    // Fixed module: both accept it.
    std::fs::write(
        game.join("scripts/util.lua"),
        "local M = {}\nfunction M.f() end\nreturn M\n",
    )
    .expect("write");
    ok(&run(&["check", s(&game)], b""));
    ok(&run(&["run", s(&game)], b""));

    // A module required only by another module is checked too.
    std::fs::write(
        game.join("scripts/util.lua"),
        "local deep = require 'deep'\nlocal M = {}\nfunction M.f() end\nreturn M\n",
    )
    .expect("write");
    std::fs::write(game.join("scripts/deep.lua"), "return {\n").expect("write");
    let check = run(&["check", s(&game)], b"");
    assert_eq!(check.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&check.stdout).contains("scripts/deep.lua:"));
    assert_eq!(run(&["run", s(&game)], b"").status.code(), Some(2));
    std::fs::write(
        game.join("scripts/util.lua"),
        "local M = {}\nfunction M.f() end\nreturn M\n",
    )
    .expect("write");
    // A file no script requires is only a warning: `run` accepts the game,
    // and so does `check`.
    let check = run(&["check", s(&game)], b"");
    let report = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{report}");
    assert!(
        report.contains("scripts/deep.lua:") && report.contains("warning"),
        "{report}"
    );
    ok(&run(&["run", s(&game)], b""));
    std::fs::remove_file(game.join("scripts/deep.lua")).expect("rm");

    // An error raised while a script loads is reported with its file:line.
    let main_src = std::fs::read_to_string(&main).expect("main");
    std::fs::write(
        &main,
        format!("{main_src}\nlocal x = nil\nlocal y = x.field\n"),
    )
    .expect("write");
    let lines = main_src.lines().count();
    let check = run(&["check", s(&game)], b"");
    let report = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{report}");
    assert!(
        report.contains(&format!(
            "scripts/main.lua:{}: error while loading",
            lines + 3
        )),
        "{report}"
    );
    std::fs::write(&main, &main_src).expect("write");
    // Bad limits: a zero, an unknown key, a string.
    for limits in [
        json!({"instructionsMax": 0}),
        json!({"bogus": 3}),
        json!({"memoryBytesMax": "big"}),
        json!([]),
    ] {
        edit_manifest(&game, |doc| doc["limits"] = limits.clone());
        let check = run(&["check", s(&game)], b"");
        let report = String::from_utf8_lossy(&check.stdout);
        assert_eq!(
            check.status.code(),
            Some(1),
            "limits {limits}: check passed\n{report}"
        );
        assert!(report.contains("limits"), "limits {limits}: {report}");
        assert!(
            report.contains("game.json:"),
            "limits {limits}: no line in {report}"
        );
        let run_out = run(&["run", s(&game)], b"");
        assert_eq!(
            run_out.status.code(),
            Some(2),
            "limits {limits}: run loaded it"
        );
        assert_no_panic(&run_out);
    }
}

/// Rule: a canceled timer (or prompt) leaves no runtime record behind:
/// after 100 turns of push-your-luck, where every answered turn cancels its
/// turn timer, `storage["@runtime"]` holds only the live turn's records.
#[test]
fn canceled_timers_leave_nothing_behind_after_100_turns() {
    let game = example_copy("timers-100", "push-your-luck");
    let dir = game.parent().expect("scratch").to_path_buf();
    edit_manifest(&game, |doc| {
        doc["settings"]["maxTurns"] = json!(1000);
        doc["settings"]["target"] = json!(1_000_000);
    });
    let mut lines = vec![
        r#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"ann"}}"#.to_owned(),
        r#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"bob"}}"#.to_owned(),
        r#"{"type":"system.seat_assign","source":{"kind":"system"},"payload":{"playerId":"ann","seatId":"north"}}"#.to_owned(),
        r#"{"type":"system.seat_assign","source":{"kind":"system"},"payload":{"playerId":"bob","seatId":"south"}}"#.to_owned(),
    ];
    // Every turn, the seat's player holds at once (ask_N is the Nth prompt).
    for turn in 1..=100 {
        let who = if turn % 2 == 1 { "ann" } else { "bob" };
        lines.push(format!(
            r#"{{"type":"prompt.respond","source":{{"kind":"player","playerId":"{who}"}},"payload":{{"promptId":"ask_{turn}","response":"hold"}}}}"#
        ));
    }
    let actions = write(&dir, "turns.jsonl", (lines.join("\n") + "\n").as_bytes());
    let save = dir.join("after.json");
    let out = run(
        &[
            "run",
            s(&game),
            "--actions",
            s(&actions),
            "--format",
            "jsonl",
            "--save",
            s(&save),
        ],
        b"",
    );
    let events = ok(&out);
    assert!(!events.contains("action.rejected"), "a turn was rejected");
    assert_eq!(events.matches("\"type\":\"timer.canceled\"").count(), 100);
    let doc: Value = serde_json::from_slice(&std::fs::read(&save).expect("save")).expect("json");
    let runtime = &doc["state"]["storage"]["@runtime"];
    let timers = runtime["timers"].as_object().map_or(0, |m| m.len());
    let prompts = runtime["prompts"].as_object().map_or(0, |m| m.len());
    assert_eq!(
        (timers, prompts),
        (1, 1),
        "only the 101st turn's timer and prompt: {runtime}"
    );
    // The kernel keeps only scheduled timers: the 100 canceled ones are gone.
    let kernel_timers = doc["state"]["timers"].as_object().expect("timers");
    assert_eq!(kernel_timers.len(), 1, "{kernel_timers:?}");
    assert!(kernel_timers.values().all(|t| t["status"] == "scheduled"));
}

fn test_run(game: &Path, scenario: &Value) -> (i32, String) {
    let file = game.join("tests/probe.json");
    std::fs::write(&file, scenario.to_string()).expect("write");
    let out = run(&["test", s(&file)], b"");
    assert_no_panic(&out);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Rule: a scenario may set settings for itself, assert that an event did
/// not happen (`absent`) and assert a list's length (`lengths`); each fails
/// with a message naming the step when it does not hold.
#[test]
fn scenarios_set_settings_and_assert_absent_events_and_lengths() {
    let game = example_copy("scenario-asserts", "push-your-luck");
    let hold = |who: &str, n: u32| json!({"do": {"type": "prompt.respond", "source": {"kind": "player", "playerId": who}, "payload": {"promptId": format!("ask_{n}"), "response": "hold"}}});
    let base = |settings: Value, last: Value| {
        json!({
            "name": "probe",
            "players": ["ann", "bob"],
            "settings": settings,
            "steps": [hold("ann", 1), hold("bob", 2), last]
        })
    };
    // maxTurns 2: after two holds the game is over, no third prompt.
    let pass = base(
        json!({"maxTurns": 2}),
        json!({"expect": {"settings.maxTurns": 2, "settings.target": 12}, "lengths": {"prompts": 2, "players": 2, "storage.main.seat": 5}}),
    );
    let (code, out) = test_run(&game, &pass);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("1 passed, 0 failed"), "{out}");

    // With maxTurns 2 the second hold creates no prompt: `absent` holds;
    // with the manifest's maxTurns it does not, and the step is named.
    let absent = |settings: Value| {
        json!({
            "players": ["ann", "bob"],
            "settings": settings,
            "steps": [hold("ann", 1), {"do": hold("bob", 2)["do"], "absent": [{"type": "prompt.created"}]}]
        })
    };
    let (code, out) = test_run(&game, &absent(json!({"maxTurns": 2})));
    assert_eq!(code, 0, "{out}");
    let (code, out) = test_run(&game, &absent(json!({})));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("step 2: expected no prompt.created"), "{out}");
    // `absent` with data matches only that data.
    let with_data = json!({"players": ["ann", "bob"], "steps": [
        {"do": hold("ann", 1)["do"], "absent": [{"type": "counter.changed", "data": {"entityId": "score_south"}}]}
    ]});
    let (code, out) = test_run(&game, &with_data);
    assert_eq!(code, 0, "{out}");

    // A wrong length fails, naming the path and both lengths.
    let wrong = base(json!({}), json!({"lengths": {"prompts": 5}}));
    let (code, out) = test_run(&game, &wrong);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("step 3: state prompts: expected length 5, got 3"),
        "{out}"
    );
    // An absent key under an existing object has length 0; a typo in the
    // path above it fails instead of passing as 0.
    let absent_key =
        json!({"players": ["ann", "bob"], "steps": [{"lengths": {"storage.main.nothing": 0}}]});
    let (code, out) = test_run(&game, &absent_key);
    assert_eq!(code, 0, "{out}");
    let typo =
        json!({"players": ["ann", "bob"], "steps": [{"lengths": {"storage.mian.nothing": 0}}]});
    let (code, out) = test_run(&game, &typo);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("no such path (storage.mian does not exist)"),
        "{out}"
    );
    // The same for `expect`: null for an absent key, a failure for a typo.
    let (code, out) = test_run(
        &game,
        &json!({"players": ["ann", "bob"], "steps": [{"expect": {"storage.main.nothing": null}}]}),
    );
    assert_eq!(code, 0, "{out}");
    let (code, out) = test_run(
        &game,
        &json!({"players": ["ann"], "steps": [{"expect": {"storage.mian.nothing": null}}]}),
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("no such path (storage.mian does not exist)"),
        "{out}"
    );
    // Malformed new keys are clear errors, not passes.
    for bad in [
        json!({"settings": 3, "steps": []}),
        json!({"steps": [{"lengths": {"prompts": -1}}]}),
        json!({"steps": [{"absent": [{}]}]}),
    ] {
        let (code, out) = test_run(&game, &bad);
        assert_eq!(code, 1, "{bad}: {out}");
        assert!(out.contains("FAIL"), "{out}");
    }
    // A setting the kernel refuses (nested) stops the scenario clearly.
    let (code, out) = test_run(&game, &json!({"settings": {"x": {"y": 1}}, "steps": []}));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("did not start"), "{out}");
}

/// Rule: `digipology test FILE` finds the game of a scenario file given
/// relative to the current folder (here, from inside the game folder).
#[test]
fn a_single_scenario_file_resolves_from_the_current_folder() {
    let game = example_copy("scenario-cwd", "push-your-luck");
    let out = bin()
        .args(["test", "tests/turn-timer.json"])
        .current_dir(&game)
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("1 passed, 0 failed"), "{text}");
    // From inside tests/ itself.
    let out = bin()
        .args(["test", "turn-timer.json"])
        .current_dir(game.join("tests"))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // And from the folder above, and given as ./tests/…
    let out = bin()
        .args(["test", "./tests/turn-timer.json"])
        .current_dir(&game)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let parent = game.parent().expect("parent");
    let out = bin()
        .args(["test", "push-your-luck/tests/turn-timer.json"])
        .current_dir(parent)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Rule: `system.game_start` must be sequence 0, so when the actions file
/// starts the game itself, `--players` are joined and seated after it.
#[test]
fn players_join_after_a_game_start_from_the_actions_file() {
    let dir = scratch("players-after-start");
    let actions = write(
        &dir,
        "a.jsonl",
        br#"{"type":"system.game_start","source":{"kind":"system"},"payload":{"settings":{"handSize":3}}}
{"type":"counter.add","source":{"kind":"player","playerId":"ann"},"payload":{"entityId":"score_north","amount":2}}
"#,
    );
    let out = run(
        &[
            "run",
            "examples/basics",
            "--actions",
            s(&actions),
            "--players",
            "ann,bob",
            "--format",
            "jsonl",
        ],
        b"",
    );
    ok(&out);
    let evs = events(&out);
    assert_eq!(evs[0]["type"], "game.started", "{evs:?}");
    assert_eq!(evs[0]["data"]["settings"]["handSize"], 3);
    assert!(
        evs.iter().all(|e| e["type"] != "action.rejected"),
        "{evs:?}"
    );
    let joined: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "seat.assigned")
        .collect();
    assert_eq!(joined.len(), 2, "{evs:?}");
}

/// Rule: a save game keeps the room's alias secret (docs/observations.md),
/// derived from the seed: a resumed room saves the same one again, and
/// another seed gives another.
#[test]
fn a_save_keeps_the_alias_secret_of_its_seed() {
    let dir = scratch("alias-key");
    let save = |args: &[&str], name: &str| -> serde_json::Value {
        let path = dir.join(name);
        let mut all: Vec<&str> = args.to_vec();
        let p = path.to_str().unwrap_or_default().to_owned();
        all.extend(["--save", &p]);
        let out = run(&all, b"");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(&std::fs::read_to_string(&path).expect("save")).expect("json")
    };
    let first = save(&["run", "examples/basics", "--seed", "7"], "s1.json");
    let key = first["aliasKey"].as_str().unwrap_or_default().to_owned();
    assert_eq!(key.len(), 64, "{first}");
    let s1 = dir.join("s1.json");
    let again = save(
        &[
            "run",
            "examples/basics",
            "--resume",
            s1.to_str().unwrap_or_default(),
        ],
        "s2.json",
    );
    assert_eq!(again["aliasKey"].as_str(), Some(key.as_str()));
    let other = save(&["run", "examples/basics", "--seed", "8"], "s3.json");
    assert_ne!(other["aliasKey"].as_str(), Some(key.as_str()));
}
