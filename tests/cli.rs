//! `digipology run`: the example runs, bad input is rejected line by line
//! and never crashes, broken packages get a clear message.

mod common;

use common::*;
use serde_json::json;

#[test]
fn the_readme_example_runs() {
    let out = run(
        &[
            "run",
            "examples/basics",
            "--actions",
            "examples/basics/actions.jsonl",
            "--seed",
            "7",
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    assert_eq!(ev[0]["type"], json!("game.started"));
    assert!(ev.iter().any(|e| e["type"] == json!("deck.drawn")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("state hash"), "{stderr}");
    assert_no_panic(&out);
}

#[test]
fn with_no_actions_every_seat_gets_a_player() {
    let out = run(&["run", "examples/basics"], b"");
    assert!(out.status.success());
    let types: Vec<_> = events(&out)
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        types,
        vec![
            "game.started",
            "player.joined",
            "seat.assigned",
            "player.joined",
            "seat.assigned"
        ]
    );
    let ev = events(&out);
    assert_eq!(ev[2]["data"], json!({"seatId": "north", "playerId": "p1"}));
    assert_eq!(ev[4]["data"], json!({"seatId": "south", "playerId": "p2"}));
}

#[test]
fn bad_lines_become_rejections_and_the_run_goes_on() {
    let dir = scratch("bad-lines");
    let good = r#"{"type":"counter.add","source":{"kind":"player","playerId":"p1"},"payload":{"entityId":"score_north","amount":1}}"#;
    let big = "x".repeat(10 * 1024 * 1024);
    let nested = format!("{}{}", "{\"a\":".repeat(50_000), "}".repeat(50_000));
    let mut input: Vec<u8> = Vec::new();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"{not json".to_vec(), "malformed_action"),
        (br#"{"type":"entity.teleport","source":{"kind":"system"},"payload":{}}"#.to_vec(), "unknown_action_type"),
        (br#"{"type":"counter.add","source":{"kind":"player","playerId":"p1"},"payload":{"entityId":"score_north"}}"#.to_vec(), "missing_field"),
        (br#"{"type":"counter.add","source":{"kind":"player","playerId":"p1"}}"#.to_vec(), "malformed_action"),
        (format!(r#"{{"type":"counter.add","source":{{"kind":"player","playerId":"p1"}},"payload":{{"entityId":"{big}","amount":1}}}}"#).into_bytes(), "entity_not_found"),
        (format!(r#"{{"type":"counter.add","source":{{"kind":"player","playerId":"p1"}},"payload":{nested}}}"#).into_bytes(), "malformed_action"),
        (vec![b'{', 0xff, 0xfe, b'}'], "malformed_action"),
    ];
    for (line, _) in &cases {
        input.extend_from_slice(line);
        input.push(b'\n');
        input.extend_from_slice(good.as_bytes());
        input.push(b'\n');
        input.extend_from_slice(b"   \n");
    }
    let actions = write(&dir, "actions.jsonl", &input);
    let out = run(
        &[
            "run",
            "examples/basics",
            "--players",
            "p1,p2",
            "--actions",
            actions.to_str().unwrap_or_default(),
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_panic(&out);
    let ev = events(&out);
    // game_start + 2 joins + 2 seats = 5 setup actions, then pairs.
    let after_setup: Vec<_> = ev
        .iter()
        .filter(|e| e["seq"].as_u64().unwrap_or(0) >= 5)
        .collect();
    assert_eq!(after_setup.len(), cases.len() * 2);
    for (i, (_, code)) in cases.iter().enumerate() {
        let bad = after_setup[2 * i];
        let ok = after_setup[2 * i + 1];
        assert_eq!(bad["type"], json!("action.rejected"), "case {i}");
        assert_eq!(
            bad["data"]["code"],
            json!(code),
            "case {i}: {}",
            bad["data"]["message"]
        );
        assert_eq!(ok["type"], json!("counter.changed"), "case {i}");
        assert_eq!(
            ok["data"]["value"],
            json!(i + 1),
            "case {i}: the run went on"
        );
    }
}

#[test]
fn an_overlong_line_is_skipped_without_buffering_it() {
    let dir = scratch("overlong");
    let mut input = vec![b'x'; 17 * 1024 * 1024];
    input.extend_from_slice(b"\n{\"type\":\"system.player_joined\",\"source\":{\"kind\":\"system\"},\"payload\":{\"playerId\":\"late\"}}\n");
    let actions = write(&dir, "actions.jsonl", &input);
    let out = run(
        &[
            "run",
            "examples/basics",
            "--actions",
            actions.to_str().unwrap_or_default(),
        ],
        b"",
    );
    assert!(out.status.success());
    let ev = events(&out);
    assert_eq!(ev[1]["data"]["code"], json!("malformed_action"));
    assert!(ev[1]["data"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("exceeds"));
    assert_eq!(ev[2]["type"], json!("player.joined"));
}

#[test]
fn actions_can_come_from_standard_input() {
    let line = br#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"zed"}}"#;
    let out = run(&["run", "examples/basics", "--actions", "-"], line);
    assert!(out.status.success());
    let ev = events(&out);
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[1]["data"]["playerId"], json!("zed"));
}

#[test]
fn an_actions_file_that_starts_the_game_itself_is_not_started_twice() {
    let dir = scratch("own-start");
    let actions = write(
        &dir,
        "a.jsonl",
        br#"{"type":"system.game_start","source":{"kind":"system"},"payload":{"settings":{"fast":true}}}"#,
    );
    let out = run(
        &[
            "run",
            "examples/basics",
            "--actions",
            actions.to_str().unwrap_or_default(),
        ],
        b"",
    );
    let ev = events(&out);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["data"], json!({"settings": {"fast": true}}));
}

#[test]
fn events_and_state_can_go_to_files() {
    let dir = scratch("files");
    let events_path = dir.join("events.jsonl");
    let state_path = dir.join("state.json");
    let out = run(
        &[
            "run",
            "examples/basics",
            "--actions",
            "examples/basics/actions.jsonl",
            "--events",
            events_path.to_str().unwrap_or_default(),
            "--state-out",
            state_path.to_str().unwrap_or_default(),
        ],
        b"",
    );
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let events = std::fs::read_to_string(&events_path).expect("events written");
    assert!(events.lines().count() > 10);
    let state = std::fs::read_to_string(&state_path).expect("state written");
    let parsed: serde_json::Value = serde_json::from_str(&state).expect("state is JSON");
    assert_eq!(parsed["kernelVersion"], json!(1));
    assert_eq!(
        parsed["sequence"],
        json!(events.lines().last().map_or(0, |l| {
            serde_json::from_str::<serde_json::Value>(l)
                .map_or(0, |v| v["seq"].as_u64().unwrap_or(0) + 1)
        }))
    );
    // RFC 8785: re-serializing canonically gives the same bytes.
    let canon = digipology_kernel::Value::from_json(&parsed)
        .expect("finite")
        .to_canonical_json();
    assert_eq!(canon, state);
}

#[test]
fn a_missing_game_says_what_to_do() {
    let out = run(&["run", "examples/no-such-game"], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("examples/no-such-game/game.json") && err.contains("game.json"),
        "{err}"
    );
    assert_no_panic(&out);
}

#[test]
fn a_game_json_syntax_error_names_file_line_and_column() {
    let dir = scratch("syntax");
    write(&dir, "game.json", b"{\n  \"seats\": [\"a\",]\n}\n");
    let out = run(&["run", dir.to_str().unwrap_or_default()], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("game.json:2:"), "{err}");
    assert_no_panic(&out);
}

#[test]
fn a_bad_game_field_names_its_path() {
    let dir = scratch("field");
    write(
        &dir,
        "game.json",
        br#"{"entities":[{"id":"d","components":{"die":{"faces":[1,{"x":2}]}}}]}"#,
    );
    let out = run(&["run", dir.to_str().unwrap_or_default()], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"entities["d"].components.die.faces[1]"#),
        "{err}"
    );
    write(
        &dir,
        "game.json",
        br#"{"entities":[{"id":"d","components":{"dice":{}}}]}"#,
    );
    let out = run(&["run", dir.to_str().unwrap_or_default()], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown component \"dice\""), "{err}");
}

#[test]
fn a_missing_actions_file_is_a_usage_error() {
    let out = run(&["run", "examples/basics", "--actions", "nope.jsonl"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.jsonl"));
}

#[test]
fn every_example_runs_with_and_without_its_actions() {
    let mut games = 0;
    for entry in std::fs::read_dir(root().join("examples"))
        .expect("examples folder")
        .flatten()
    {
        let dir = entry.path();
        if !dir.join("game.json").is_file() {
            continue;
        }
        games += 1;
        let game = dir.to_str().unwrap_or_default().to_owned();
        let out = run(&["run", &game], b"");
        assert!(
            out.status.success(),
            "{game}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_no_panic(&out);
        let actions = dir.join("actions.jsonl");
        if actions.is_file() {
            let out = run(
                &[
                    "run",
                    &game,
                    "--actions",
                    actions.to_str().unwrap_or_default(),
                ],
                b"",
            );
            assert!(
                out.status.success(),
                "{game}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let errors: Vec<_> = events(&out)
                .into_iter()
                .filter(|e| e["type"] == "script.error")
                .collect();
            assert!(errors.is_empty(), "{game}: {errors:?}");
        }
    }
    assert!(games >= 2, "expected the example games, found {games}");
}

/// Rule: events already produced are out before the room waits for input
/// (docs/formats.md, Events). A room reading actions from a pipe shows the
/// first actions' events while it still waits for more; killed then
/// (SIGKILL), they are all there — also when what it read ends in blank
/// lines or in half of the next line.
#[test]
fn each_actions_events_are_out_before_the_room_waits() {
    for tail in ["", "\n\n", "\r\n   \n", "{\"type\":\"counter.a"] {
        events_are_out_while_waiting(tail);
    }
}

fn events_are_out_while_waiting(tail: &str) {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = bin()
        .args([
            "run",
            "examples/basics",
            "--actions",
            "-",
            "--format",
            "jsonl",
        ])
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, r#"{{"type":"system.player_joined","source":{{"kind":"system"}},"payload":{{"playerId":"ann"}}}}"#).expect("write");
    let add = r#"{"type":"counter.add","source":{"kind":"player","playerId":"ann"},"payload":{"entityId":"score_north","amount":3}}"#;
    write!(stdin, "{add}\n{tail}").expect("write");
    stdin.flush().expect("flush");
    // Reading blocks until the events arrive: with output held in a buffer
    // until exit, this would wait for ever (the room waits for more input).
    let seen = lines_until(child.stdout.take().expect("stdout"), "counter.changed");
    child.kill().expect("kill -9");
    let _ = child.wait();
    drop(stdin);
    assert!(
        seen.iter().any(|l| l.contains("counter.changed")),
        "the second action's events never arrived (input ending {tail:?}): {seen:#?}"
    );
    assert!(seen[0].contains("game.started"), "{seen:#?}");
}

/// `run --view`: the events and `--state-out` as a seat or a spectator
/// sees them (docs/observations.md); an unknown seat is a usage error.
#[test]
fn a_run_can_show_what_one_seat_sees() {
    let dir = scratch("view");
    let game = "examples/peek-and-play";
    let actions = "examples/peek-and-play/actions.jsonl";
    let referee = run(
        &["run", game, "--actions", actions, "--format", "jsonl"],
        b"",
    );
    assert!(referee.status.success());
    // Which cards the referee saw dealt to the south hand.
    let dealt = events(&referee)
        .into_iter()
        .find(|e| e["type"] == "deck.dealt")
        .expect("a deal");
    let south_cards: Vec<String> = dealt["data"]["entityIds"]
        .as_array()
        .expect("ids")
        .iter()
        .skip(1)
        .step_by(2)
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    assert_eq!(south_cards.len(), 3);
    for (view, sees_south) in [("north", false), ("south", true), ("spectator", false)] {
        let state = dir.join(format!("{view}.json"));
        let out = run(
            &[
                "run",
                game,
                "--actions",
                actions,
                "--format",
                "jsonl",
                "--view",
                view,
                "--state-out",
                state.to_str().unwrap_or_default(),
            ],
            b"",
        );
        assert!(out.status.success(), "{view}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("view {view}, view hash ")),
            "{stderr}"
        );
        let dealt = events(&out)
            .into_iter()
            .find(|e| e["type"] == "deck.dealt")
            .expect("a deal");
        let shown = dealt["data"]["entityIds"].to_string();
        for card in &south_cards {
            assert_eq!(shown.contains(card.as_str()), sees_south, "{view}: {shown}");
        }
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&state).expect("state written"))
                .expect("JSON");
        assert!(doc.get("rng").is_none(), "{view} sees the RNG");
        assert_eq!(
            doc["entities"]["draw_pile"]["components"]["container"].get("items"),
            None,
            "{view} sees the pile's order"
        );
    }
    let out = run(&["run", game, "--view", "west"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("\"west\" is not referee, spectator or one of the game's seats"));
}

/// A reader that goes away (`digipology … | head`) stops the program
/// quietly, as it stops a shell tool: status 141, no "internal error".
/// The pipe is closed before the program writes anything: `simulate`
/// writes its report only after playing its matches.
#[test]
fn a_closed_pipe_is_no_internal_error() {
    let mut child = bin()
        .args(["simulate", "examples/tic-tac-toe", "--matches", "200"])
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("simulate starts");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("simulate ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("internal error"), "{stderr}");
    assert_eq!(out.status.code(), Some(141), "{stderr}");
}

/// `run --format text`: one line an event, `#seq type sentence`, the
/// sentence made from the event as the viewer sees it — the same the
/// table page's log shows (docs/table.md) — so north reads south's dealt
/// cards as hidden ones.
#[test]
fn readable_events_are_sentences_of_the_viewers_events() {
    let game = "examples/peek-and-play";
    let actions = "examples/peek-and-play/actions.jsonl";
    let args = |format| {
        [
            "run",
            game,
            "--actions",
            actions,
            "--view",
            "north",
            "--format",
            format,
        ]
    };
    let jsonl = run(&args("jsonl"), b"");
    let text = run(&args("text"), b"");
    assert!(jsonl.status.success() && text.status.success());
    let lines: Vec<String> = String::from_utf8_lossy(&text.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    let events = events(&jsonl);
    assert_eq!(lines.len(), events.len());
    for (line, e) in lines.iter().zip(&events) {
        let said = digipology_room::sentence::sentence(e);
        let ty = e["type"].as_str().unwrap_or_default();
        assert_eq!(
            *line,
            format!("#{:<4} {ty:<18} {said}", e["seq"].to_string())
        );
    }
    let dealt = lines
        .iter()
        .find(|l| l.contains("deck.dealt"))
        .expect("the deal");
    assert!(
        dealt.contains("draw_pile dealt 3 cards each to hand_north and hand_south: ")
            && dealt.ends_with(" and 3 hidden cards."),
        "{dealt}"
    );
}

/// A run whose actions name players nobody joined says how to join them
/// (a newcomer's first surprise: `--actions` joins nobody).
#[test]
fn actions_without_players_end_with_a_hint() {
    let dir = scratch("no-players");
    let all =
        std::fs::read_to_string(root().join("examples/hearts/actions.jsonl")).expect("actions");
    let plays: String = all
        .lines()
        .filter(|l| !l.contains("system."))
        .map(|l| format!("{l}\n"))
        .collect();
    let file = write(&dir, "plays.jsonl", plays.as_bytes());
    let out = run(
        &[
            "run",
            "examples/hearts",
            "--actions",
            &file.display().to_string(),
        ],
        b"",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("hint: no player has joined"), "{err}");
    let out = run(
        &[
            "run",
            "examples/hearts",
            "--actions",
            "examples/hearts/actions.jsonl",
        ],
        b"",
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("hint:"));
}
