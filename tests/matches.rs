//! The match contract end to end (docs/match.md): record and replay of
//! clocked matches, byte-identical runs across processes, the published
//! schemas against the kernel, and the sensing stream kept apart from the
//! game's randomness. The rules themselves are checked by the example
//! games' scenarios (examples/rock-paper-scissors, nim-clock, tic-tac-toe).

mod common;

use common::{assert_no_panic, run, scratch, seated_room, sends, write};
use serde_json::{json, Value};

fn respond(player: &str, prompt: &str, answer: &str, at: i64) -> Value {
    json!({"type": "prompt.respond", "source": {"kind": "player", "playerId": player},
           "payload": {"promptId": prompt, "response": answer}, "at": at})
}

/// A path as a command-line argument.
fn arg(p: &std::path::Path) -> &str {
    p.to_str().unwrap_or_default()
}

/// `digipology run` with `args` and JSONL events; it must succeed.
fn run_ok(args: &[&str]) -> std::process::Output {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "jsonl"]);
    let out = run(&all, b"");
    assert_no_panic(&out);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// [`run_ok`] of `game` with players p1, p2, the `actions` file and
/// `extra` arguments.
fn run_game(game: &str, actions: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![game, "--players", "p1,p2", "--actions", arg(actions)];
    args.extend_from_slice(extra);
    run_ok(&args)
}

/// [`run_game`] of rock-paper-scissors.
fn run_rps(actions: &std::path::Path, extra: &[&str]) -> std::process::Output {
    run_game("examples/rock-paper-scissors", actions, extra)
}

/// Replays a record; it must verify every state hash.
fn assert_replays(record: &std::path::Path) {
    let replay = run(&["replay", arg(record)], b"");
    assert_no_panic(&replay);
    let said = String::from_utf8_lossy(&replay.stdout);
    assert!(
        replay.status.success() && said.contains("every state hash matches"),
        "{said}{}",
        String::from_utf8_lossy(&replay.stderr)
    );
}

/// A rock-paper-scissors match with every kind of expiry: a late answer
/// after a decision expired (safe default), retries run out, a sensing
/// call, phases closed by readiness, and the end of input running the
/// clocks out to the result.
fn rps_actions() -> String {
    let lines = [
        respond("p1", "prompt_4_1", "paper", 1000),
        json!({"type": "match.sense", "source": {"kind": "player", "playerId": "p1"}, "payload": {"name": "oracle"}, "at": 1200}),
        respond("p2", "prompt_4_2", "lizard", 1500),
        respond("p2", "prompt_4_2", "lizard", 1600),
        respond("p2", "prompt_4_2", "lizard", 1700),
        respond("p1", "prompt_9_1", "scissors", 12_000),
        respond("p2", "prompt_9_2", "rock", 25_000),
    ];
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn a_recorded_clocked_match_replays_hash_for_hash() {
    let dir = scratch("match-replay");
    let actions = write(&dir, "rps.jsonl", rps_actions().as_bytes());
    let record = dir.join("rps.record");
    run_rps(&actions, &["--record", arg(&record)]);
    let text = std::fs::read_to_string(&record).expect("the record");
    // Every kind of room-made input is in the record.
    for needle in [
        "\"kind\":\"decision_expired\"",
        "\"kind\":\"invalid_retries_exhausted\"",
        "\"kind\":\"phase_ready\"",
        "\"origin\":\"safe_default\"",
        "\"type\":\"match.sense\"",
        "\"type\":\"match.finish\"",
    ] {
        assert!(text.contains(needle), "the record lacks {needle}");
    }
    assert_replays(&record);
}

/// A safe default is the room's, not the seat's: it is not metered, and a
/// record marks it so a replay does the same. Passed off as the player's
/// own input, it would be charged, and the replay diverges.
#[test]
fn a_replay_follows_the_safe_default_mark() {
    let dir = scratch("match-mark");
    let actions = write(&dir, "rps.jsonl", rps_actions().as_bytes());
    let config = write(
        &dir,
        "metered.json",
        br#"{"timing": {"decisionLimitMs": 10000, "phaseLimits": {"choose": {"ms": 15000, "closure": "ready_or_deadline"}}},
             "resources": {"moves": {"amount": 100, "reset": "match"}, "retries": {"amount": 3, "reset": "decision"}, "hints": {"amount": 2, "reset": "match"}},
             "metering": {"action": {"resource": "moves", "cost": 1}, "invalidAction": {"resource": "retries", "cost": 1}},
             "sensing": {"oracle": {"resource": "hints", "cost": 1}},
             "phases": {"lobby": [], "choose": ["prompt.respond"], "done": []}}"#,
    );
    let record = dir.join("rps.record");
    run_rps(
        &actions,
        &["--match", arg(&config), "--record", arg(&record)],
    );
    let text = std::fs::read_to_string(&record).expect("the record");
    assert_replays(&record);
    let forged = text.replacen(",\"origin\":\"safe_default\"", "", 1);
    assert_ne!(forged, text);
    let forged_path = write(&dir, "forged.record", forged.as_bytes());
    let replay = run(&["replay", arg(&forged_path)], b"");
    let said = String::from_utf8_lossy(&replay.stdout);
    assert!(
        !replay.status.success() && !said.contains("every state hash matches"),
        "a replay ignored the safe default mark: {said}"
    );
    assert!(
        said.contains("differing state paths: match"),
        "the divergence names the match book: {said}"
    );
}

#[test]
fn a_room_match_override_travels_with_the_record() {
    let dir = scratch("match-override");
    let config = write(
        &dir,
        "fast.json",
        br#"{"timing": {"playerTotalMs": 3000, "clockVisibility": "private"}, "phases": {"play": ["button.press"], "over": []}}"#,
    );
    let record = dir.join("nim.record");
    let out = run_ok(&[
        "examples/nim-clock",
        "--match",
        arg(&config),
        "--record",
        arg(&record),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"{"status":"match_over","scores":{"first":0,"second":1}}"#),
        "the first seat's 3-second clock runs out and the result is printed: {err}"
    );
    let events = common::events(&out);
    let exhausted = events
        .iter()
        .find(|e| e["type"] == "match.host_event")
        .expect("an expiry");
    assert_eq!(exhausted["data"]["kind"], json!("player_time_exhausted"));
    assert_replays(&record);
}

#[test]
fn the_same_match_is_byte_identical_across_two_processes() {
    let dir = scratch("match-twice");
    let actions = write(&dir, "rps.jsonl", rps_actions().as_bytes());
    let mut outputs = Vec::new();
    for i in 0..2 {
        let state = dir.join(format!("state{i}.json"));
        let record = dir.join(format!("record{i}.jsonl"));
        let observations = dir.join(format!("obs{i}.jsonl"));
        let out = run_rps(
            &actions,
            &[
                "--seed",
                "42",
                "--state-out",
                arg(&state),
                "--record",
                arg(&record),
                "--view",
                "a",
                "--observations",
                arg(&observations),
            ],
        );
        let read = |p: &std::path::Path| std::fs::read(p).expect("an output");
        outputs.push((
            out.stdout,
            out.stderr,
            read(&state),
            read(&record),
            read(&observations),
        ));
    }
    assert!(!outputs[0].4.is_empty(), "observations were written");
    assert_eq!(
        outputs[0], outputs[1],
        "two processes, same inputs: same bytes"
    );
}

/// Every tool the manifest publishes: a payload its schema accepts is
/// never refused by the kernel for its shape, and a payload missing a
/// required field is refused by both with `missing_field`.
#[test]
fn the_published_schemas_agree_with_the_kernel() {
    let out = run(&["manifest", "examples/basics"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let tools = manifest["tools"].as_object().expect("tools");
    assert!(tools.len() >= 16, "every seat action is published");
    let transform = json!({"position": {"x": 0, "y": 0, "z": 0}, "rotation": {"x": 0, "y": 0, "z": 0, "w": 1}, "scale": {"x": 1, "y": 1, "z": 1}});
    let shape_codes = [
        "malformed_action",
        "unknown_key",
        "missing_field",
        "invalid_type",
        "not_finite",
    ];
    for (ty, schema) in tools {
        let payload_schema = &schema["properties"]["payload"];
        let mut payload = serde_json::Map::new();
        for (key, s) in payload_schema["properties"]
            .as_object()
            .expect("properties")
        {
            let v = match s["type"].as_str() {
                Some("string") => json!("x"),
                Some("number") => json!(1),
                Some("integer") => json!(1),
                Some("boolean") => json!(true),
                Some("array") => json!(["x"]),
                Some("object") if key == "transform" => transform.clone(),
                Some("object") => json!({}),
                _ => json!("x"),
            };
            payload.insert(key.clone(), v);
        }
        let action =
            json!({"type": ty, "source": {"kind": "player", "playerId": "p1"}, "payload": payload});
        let mut k = digipology_kernel::Kernel::new(digipology_kernel::State::new(0));
        let mut host = digipology_kernel::NoScripts;
        for setup in [
            json!({"type": "system.game_start", "source": {"kind": "system"}, "payload": {"settings": {"sandbox": true}}}),
            json!({"type": "system.player_joined", "source": {"kind": "system"}, "payload": {"playerId": "p1"}}),
        ] {
            assert!(k.process_json(&setup, &mut host).accepted());
        }
        let got = k.process_json(&action, &mut host);
        if let Some(r) = got.rejection() {
            assert!(
                !shape_codes.contains(&r.code.as_str()),
                "{ty}: the schema accepts what the kernel refuses for its shape: {r}"
            );
        }
        for required in payload_schema["required"].as_array().expect("required") {
            let mut less = payload.clone();
            less.remove(required.as_str().unwrap_or_default());
            let action = json!({"type": ty, "source": {"kind": "player", "playerId": "p1"}, "payload": less});
            if ty == "match.sense" {
                continue; // answered by the room, never by the kernel alone
            }
            let got = k.process_json(&action, &mut host);
            assert_eq!(
                got.rejection().map(|r| r.code.as_str()),
                Some("missing_field"),
                "{ty} without {required}"
            );
            let schema_says = digipology_room::matches::schema::check(ty, &Value::Object(less));
            assert_eq!(
                schema_says.err().map(|r| r.code.as_str()),
                Some("missing_field"),
                "{ty} without {required}: the schema check"
            );
        }
    }
}

/// Sensing draws from the match's own stream: a match with sensing calls
/// leaves the game's RNG exactly where the same match without them does.
#[test]
fn sensing_never_touches_the_games_randomness() {
    let dir = scratch("match-sense-rng");
    let base = [respond("p1", "prompt_4_1", "rock", 100)];
    let sense = json!({"type": "match.sense", "source": {"kind": "player", "playerId": "p2"}, "payload": {"name": "oracle"}, "at": 50});
    let mut rngs = Vec::new();
    for with_sense in [false, true] {
        let mut text = String::new();
        if with_sense {
            text.push_str(&format!("{sense}\n"));
        }
        for l in &base {
            text.push_str(&format!("{l}\n"));
        }
        let actions = write(&dir, &format!("a{with_sense}.jsonl"), text.as_bytes());
        let state = dir.join(format!("s{with_sense}.json"));
        let out = run_rps(&actions, &["--save", arg(&state)]);
        let events = common::events(&out);
        assert_eq!(
            events.iter().any(|e| e["type"] == "match.sensed"),
            with_sense
        );
        let save: Value =
            serde_json::from_slice(&std::fs::read(&state).expect("save")).expect("JSON");
        rngs.push((
            save["state"]["rng"].clone(),
            save["state"]["match"]["senseRng"].clone(),
        ));
    }
    assert_eq!(rngs[0].0, rngs[1].0, "the game's RNG is the same");
    assert_ne!(rngs[0].1, rngs[1].1, "the sensing stream moved");
}

fn press(player: &str, button: &str, at: i64) -> String {
    format!(
        "{}\n",
        json!({"type": "button.press", "source": {"kind": "player", "playerId": player},
               "payload": {"entityId": button}, "at": at})
    )
}

fn state_hash(out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    err.split("state hash ")
        .nth(1)
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|| panic!("no state hash in {err}"))
}

/// A match saved mid-way resumes with its book — clocks, phase, balances —
/// and ends exactly as the same match played in one go.
#[test]
fn a_saved_match_resumes_with_its_clocks() {
    let dir = scratch("match-save");
    let first = write(&dir, "first.jsonl", press("p1", "take_3", 5000).as_bytes());
    let second = write(
        &dir,
        "second.jsonl",
        (press("p2", "take_2", 20_000) + &press("p1", "take_1", 30_000)).as_bytes(),
    );
    let all = write(
        &dir,
        "all.jsonl",
        (press("p1", "take_3", 5000)
            + &press("p2", "take_2", 20_000)
            + &press("p1", "take_1", 30_000))
            .as_bytes(),
    );
    let game = "examples/nim-clock";
    let save = dir.join("save.json");
    run_game(game, &first, &["--save", arg(&save)]);
    let text = std::fs::read_to_string(&save).expect("save");
    assert!(text.contains("\"match\":{"), "the save holds the book");
    let resumed = run_ok(&[game, "--resume", arg(&save), "--actions", arg(&second)]);
    let whole = run_game(game, &all, &[]);
    assert_eq!(state_hash(&resumed), state_hash(&whole));
    let err = String::from_utf8_lossy(&whole.stderr);
    assert!(
        err.contains("match_over"),
        "the clocks ran out at the end: {err}"
    );
}

/// An expiry whose handler fails is rejected once: what it means for the
/// book (the clock ran out) holds, so it is not raised again and again.
#[test]
fn a_failing_host_event_handler_does_not_loop() {
    let game = common::example_copy("match-failing-handler", "nim-clock");
    let script = game.join("scripts/main.lua");
    let src = std::fs::read_to_string(&script).expect("script");
    std::fs::write(
        &script,
        src.replace(
            "function on_host_event(event)\n",
            "function on_host_event(event)\n  error(\"the handler is broken\")\n",
        ),
    )
    .expect("write");
    let out = run_ok(&[arg(&game)]);
    let events = common::events(&out);
    let refused = events
        .iter()
        .filter(|e| e["type"] == "action.rejected" && e["data"]["actionType"] == "match.host_event")
        .count();
    assert_eq!(refused, 1, "{events:?}");
    assert!(events
        .iter()
        .any(|e| e["type"] == "script.error" && e["data"]["function"] == "on_host_event"));
}

/// A room's own match config is saved with the room: resumed, it runs
/// under that config, not game.json's.
#[test]
fn a_resumed_room_keeps_its_own_match_config() {
    let dir = scratch("match-save-config");
    let config = write(
        &dir,
        "fast.json",
        br#"{"timing": {"playerTotalMs": 3000}, "phases": {"play": ["button.press"], "over": []}}"#,
    );
    let first = write(&dir, "first.jsonl", press("p1", "take_3", 1000).as_bytes());
    let save = dir.join("save.json");
    run_game(
        "examples/nim-clock",
        &first,
        &["--match", arg(&config), "--save", arg(&save)],
    );
    let later = write(&dir, "later.jsonl", press("p2", "take_1", 5000).as_bytes());
    let resumed = run_ok(&[
        "examples/nim-clock",
        "--resume",
        arg(&save),
        "--actions",
        arg(&later),
    ]);
    let events = common::events(&resumed);
    // Second's 3-second clock (not game.json's 60) ran out at 4000.
    let expiry = events
        .iter()
        .find(|e| e["type"] == "match.host_event")
        .expect("an expiry");
    assert_eq!(expiry["data"]["seat"], json!("second"));
    assert!(String::from_utf8_lossy(&resumed.stderr).contains(r#""scores":{"first":1,"second":0}"#));
}

/// Times at the edge of what an `at` can hold: no panic, no expiry that
/// fires again and again at the end of time.
#[test]
fn huge_times_neither_panic_nor_loop() {
    let dir = scratch("match-huge");
    let config = write(
        &dir,
        "dec.json",
        br#"{"timing": {"playerTotalMs": 60000, "decisionLimitMs": 10000}, "phases": {"play": ["button.press"], "over": []}}"#,
    );
    let actions = write(
        &dir,
        "huge.jsonl",
        (press("p1", "take_3", 9_223_372_036_854_770_000) + &press("p2", "take_1", i64::MAX))
            .as_bytes(),
    );
    let out = run_game(
        "examples/nim-clock",
        &actions,
        &[
            "--match",
            arg(&config),
            "--view",
            "first",
            "--observations",
            arg(&dir.join("obs.jsonl")),
        ],
    );
    // Before the far press: first's decision expires once at 10 s (nim
    // has no safe default, so it stays lapsed), its 60 s clock runs out,
    // and the match ends.
    let events = common::events(&out);
    let expiries = events
        .iter()
        .filter(|e| e["type"] == "match.host_event")
        .count();
    assert_eq!(expiries, 2, "{events:?}");
    assert!(events.iter().any(|e| e["type"] == "match.over"));
}

/// The same far times in a match with no clocks: the decision and phase
/// deadlines saturate instead of overflowing, and nothing refires.
#[test]
fn a_decision_at_the_end_of_time_does_not_refire() {
    let dir = scratch("match-huge-2");
    let config = write(
        &dir,
        "dec.json",
        br#"{"timing": {"decisionLimitMs": 10000}, "phases": {"play": ["button.press"], "over": []}}"#,
    );
    let actions = write(
        &dir,
        "huge.jsonl",
        press("p1", "take_3", i64::MAX - 5).as_bytes(),
    );
    let out = run_game(
        "examples/nim-clock",
        &actions,
        &[
            "--match",
            arg(&config),
            "--view",
            "second",
            "--observations",
            arg(&dir.join("obs.jsonl")),
        ],
    );
    let expiries = common::events(&out)
        .iter()
        .filter(|e| e["type"] == "match.host_event")
        .count();
    assert!(expiries <= 1, "{expiries} expiries at the end of time");
}

/// A game whose match functions answer nonsense or fail: each seat falls
/// back to waiting (or the phase stays), and the designer is told.
#[test]
fn a_game_answering_nonsense_is_told_and_the_match_goes_on() {
    let game = common::example_copy("match-nonsense", "nim-clock");
    let script = game.join("scripts/main.lua");
    let src = std::fs::read_to_string(&script).expect("script");
    let src = src.replace(
        "function participation(seat)\n",
        "function participation(seat)\n  if seat == \"second\" then return \"sleeping\" end\n",
    ) + "\nfunction is_ready() error(\"never asked: nim has no ready phase\") end\n";
    std::fs::write(&script, src).expect("write");
    let dir = scratch("match-nonsense-run");
    let actions = write(&dir, "a.jsonl", press("p1", "take_1", 100).as_bytes());
    let obs = dir.join("obs.jsonl");
    let out = run_game(
        arg(&game),
        &actions,
        &["--view", "second", "--observations", arg(&obs)],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("participation(\"second\") answered \"sleeping\""),
        "{err}"
    );
    let last: Value = std::fs::read_to_string(&obs)
        .expect("observations")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .nth(5)
        .expect("the observation after the press");
    assert_eq!(last["participation"], json!("waiting"));
}

/// `ownership: "seatTags"` (docs/match.md): a seat's action on another
/// seat's piece is refused `not_yours` before any guard, and is a game
/// rejection — charged `invalidAction` (a single retry runs out) — while
/// the piece's own seat takes it; the config travels with the record.
#[test]
fn another_seats_piece_is_not_yours_and_costs_a_retry() {
    let dir = scratch("ownership");
    let config = write(
        &dir,
        "own.json",
        br#"{"ownership": "seatTags", "resources": {"retries": {"amount": 1, "reset": "match", "visibility": "public"}}, "metering": {"invalidAction": {"resource": "retries", "cost": 1}}}"#,
    );
    let grab = |player: &str, piece: &str, at: i64| {
        json!({"type": "entity.grab", "source": {"kind": "player", "playerId": player},
               "payload": {"entityId": piece}, "at": at})
    };
    let lines = [grab("p2", "x1", 100), grab("p1", "x1", 200)];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let actions = write(&dir, "actions.jsonl", text.as_bytes());
    let record = dir.join("own.record");
    let out = run_game(
        "examples/tic-tac-toe",
        &actions,
        &["--match", arg(&config), "--record", arg(&record)],
    );
    let events = common::events(&out);
    let rejected: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "action.rejected")
        .collect();
    assert_eq!(rejected.len(), 1, "{events:?}");
    assert_eq!(rejected[0]["data"]["code"], json!("not_yours"));
    assert!(
        events.iter().any(|e| e["type"] == "match.host_event"
            && e["data"]["kind"] == json!("invalid_retries_exhausted")
            && e["data"]["seat"] == json!("o")),
        "the refusal cost o its one retry: {events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "entity.grabbed" && e["data"]["entityId"] == json!("x1")),
        "x takes its own piece: {events:?}"
    );
    assert_replays(&record);
}

/// A seat's legal actions under `ownership: "seatTags"`: its own pieces
/// and the pieces no seat owns, never another seat's — which, with no
/// guard to refuse it, a seat could otherwise pick up.
#[test]
fn another_seats_piece_is_never_a_legal_action() {
    let listed = |ownership: &str| {
        let dir = scratch(&format!("ownership-legal-{ownership}"));
        let game = json!({
            "seats": ["red", "blue"],
            "match": {"ownership": ownership},
            "entities": [
                {"id": "r1", "tags": ["red"], "components": {"grabbable": {}}},
                {"id": "b1", "tags": ["blue"], "components": {"grabbable": {}}},
                {"id": "both", "tags": ["blue", "red"], "components": {"grabbable": {}}},
                {"id": "free", "components": {"grabbable": {}}}
            ]
        });
        let mut room = seated_room(&dir, &game, 7, &["p1", "p2"]);
        let mut grabs: Vec<String> = room
            .legal_actions("red")
            .iter()
            .filter(|a| a["type"] == "entity.grab")
            .map(|a| a["payload"]["entityId"].as_str().unwrap_or("?").to_owned())
            .collect();
        grabs.sort();
        grabs
    };
    assert_eq!(listed("seatTags"), ["both", "free", "r1"]);
    assert_eq!(listed("none"), ["b1", "both", "free", "r1"]);
}

/// Ownership never tells a seat what it cannot see, and covers every key a
/// seat names pieces with: another seat's piece it sees is `not_yours` by
/// `entityId` or `deckId`; a face-down piece of another seat (its tags
/// hidden) is not refused for ownership, and one in a hidden pile is
/// refused as a missing id is, like a made-up one.
#[test]
fn ownership_refuses_only_what_the_seat_sees() {
    let dir = scratch("ownership-sight");
    let game = json!({
        "seats": ["red", "blue"],
        "match": {"ownership": "seatTags"},
        "entities": [
            {"id": "b_up", "tags": ["blue"], "components": {"flippable": {}}},
            {"id": "b_down", "tags": ["blue"], "components": {"flippable": {"flipped": true}}},
            {"id": "b_deck", "tags": ["blue"], "components": {"deck": {}, "container": {"items": ["b_card"]}}},
            {"id": "b_card", "tags": ["blue"], "components": {"flippable": {}}},
            {"id": "pile", "components": {"container": {"visibility": "hidden", "items": ["b_hidden"]}}},
            {"id": "b_hidden", "tags": ["blue"], "components": {"grabbable": {}}}
        ]
    });
    let mut room = seated_room(&dir, &game, 7, &["p1", "p2"]);
    room.keep_events();
    let mut code = |ty: &str, payload: Value| sends(&mut room, "p1", ty, payload);
    assert_eq!(
        code("entity.flip", json!({"entityId": "b_up"})),
        "not_yours"
    );
    assert_eq!(
        code("deck.shuffle", json!({"deckId": "b_deck"})),
        "not_yours"
    );
    assert_ne!(
        code("entity.flip", json!({"entityId": "b_down"})),
        "not_yours"
    );
    assert_eq!(
        code("entity.grab", json!({"entityId": "b_hidden"})),
        "entity_not_found"
    );
    assert_eq!(
        code("entity.grab", json!({"entityId": "nothing"})),
        "entity_not_found"
    );
}

/// Ownership follows a name to the piece it acts on: a deal to a player
/// goes to that player's hand (here blue's), and `stack.remove_top` takes
/// the stack's top piece (here blue's) — both `not_yours` for red, while a
/// deal to red's own hand goes through.
#[test]
fn ownership_follows_a_players_hand_and_a_stacks_top() {
    let dir = scratch("ownership-follows");
    write(
        &dir,
        "main.lua",
        br#"function on_start() game.create_stack("pile", { game.entity("s1"), game.entity("s2") }) end
"#,
    );
    let game = json!({
        "seats": ["red", "blue"],
        "match": {"ownership": "seatTags"},
        "scripts": [{"id": "main", "file": "main.lua", "bindings": [{"id": "global"}]}],
        "entities": [
            {"id": "deck", "components": {"deck": {}, "container": {"items": ["d1", "d2"]}}},
            {"id": "d1", "components": {"grabbable": {}}},
            {"id": "d2", "components": {"grabbable": {}}},
            {"id": "hand_r", "tags": ["hand", "red"], "props": {"owner": "p1"}, "components": {"container": {}}},
            {"id": "hand_b", "tags": ["blue", "hand"], "props": {"owner": "p2"}, "components": {"container": {}}},
            {"id": "s1", "components": {"stackable": {}}},
            {"id": "s2", "tags": ["blue"], "components": {"stackable": {}}}
        ]
    });
    let mut room = seated_room(&dir, &game, 7, &["p1", "p2"]);
    room.keep_events();
    let mut code = |ty: &str, payload: Value| sends(&mut room, "p1", ty, payload);
    let deal = |to: &str| json!({"deckId": "deck", "targets": [to], "cardsEach": 1});
    assert_eq!(code("deck.deal", deal("p2")), "not_yours");
    assert_eq!(
        code("stack.remove_top", json!({"stackId": "pile"})),
        "not_yours"
    );
    assert_eq!(code("deck.deal", deal("p1")), "accepted");
}

/// `ownership: "seatTags"` in a game.json that lists no seats would do
/// nothing: `check` refuses it at its path.
#[test]
fn ownership_without_seats_is_refused_by_check() {
    let dir = scratch("ownership-no-seats");
    let game = json!({
        "match": {"ownership": "seatTags"},
        "entities": [{"id": "p", "tags": ["red"], "components": {"grabbable": {}}}]
    });
    write(&dir, "game.json", game.to_string().as_bytes());
    let out = run(&["check", arg(&dir)], b"");
    assert_no_panic(&out);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("match.ownership"), "{said}");
}
