//! Nothing a game returns is dropped (issue 37): a table read from
//! `storage` and returned by a view or a match function is carried as a
//! canonical copy of what it holds, and a value the engine cannot carry is
//! refused with its key path.

mod common;

use common::scratch;
use digipology_kernel::observe::Viewer;
use serde_json::{json, Value};

/// A game whose every view and match function answers with tables read
/// from `storage` (set when the game starts): `observe`, `public_view`,
/// `score`, `legal_actions`, `bot`, `safe_default` and a sensing tool.
const GAME: &str = r#"
function on_start(event)
  storage.views = { a = { hand = { "x", "y" }, note = "mine" } }
  storage.public = { round = 1, names = { "a", "b" } }
  storage.totals = { a = 3, b = 7 }
  storage.moves = { { type = "button.press", payload = { entityId = "go" } } }
  storage.sensed = { hint = { 1, 2, 3 } }
  storage.over = false
end

function on_button_pressed(event) storage.over = true end

function observe(seat) return storage.views[seat] or storage.public end
function public_view() return storage.public end
function score() return storage.totals end
function is_terminal() return storage.over end
function legal_actions(seat) return storage.moves end
function bot(seat, roll) return storage.moves[1] end
function safe_default(seat) return storage.moves[1] end
function sense_peek(seat, input) return storage.sensed end
"#;

fn game() -> Value {
    json!({
        "seats": ["a", "b"],
        "match": {
            "resources": {"hints": {"amount": 5, "reset": "match", "visibility": "private"}},
            "sensing": {"peek": {"resource": "hints", "cost": 1}}
        },
        "entities": [{"id": "go", "components": {"button": {}}}],
        "scripts": [{"id": "main", "file": "main.lua", "bindings": [{"id": "global"}]}]
    })
}

fn room_of(name: &str, script: &str, game: &Value) -> digipology_room::room::Room {
    let dir = scratch(name);
    std::fs::write(dir.join("main.lua"), script).expect("write script");
    common::seated_room(&dir, game, 7, &["p1", "p2"])
}

/// A game's own view in an observation.
fn own_view(observation: &Value) -> &Value {
    &observation["view"]["view"]
}

/// Rule: a table read from storage and returned by a view is carried as a
/// copy of what it holds (`observe`, `public_view`).
#[test]
fn views_carry_storage_tables() {
    let mut room = room_of("answers-views", GAME, &game());
    let seat = room.observation(&Viewer::Seat("a".into()));
    assert_eq!(
        own_view(&seat),
        &json!({"hand": ["x", "y"], "note": "mine"}),
        "observe(seat) returned storage.views.a: {seat}"
    );
    let spectator = room.observation(&Viewer::Spectator);
    assert_eq!(
        own_view(&spectator),
        &json!({"round": 1, "names": ["a", "b"]}),
        "public_view() returned storage.public: {spectator}"
    );
}

/// Rule: `legal_actions`, `bot` and `safe_default` answering with storage
/// tables are read as the actions they hold.
#[test]
fn match_functions_carry_storage_tables() {
    let mut room = room_of("answers-actions", GAME, &game());
    let move_ = json!({"type": "button.press", "payload": {"entityId": "go"}});
    let legal = room.legal_actions("a");
    assert!(
        legal
            .iter()
            .any(|a| a["type"] == move_["type"] && a["payload"] == move_["payload"]),
        "legal_actions returned storage.moves: {legal:?}"
    );
    let bot = room.game_bot("a", 1).expect("the bot answers");
    assert_eq!(
        bot["payload"], move_["payload"],
        "bot returned storage.moves[1]"
    );
    let safe = room.safe_default_action("a").expect("a safe default");
    assert_eq!(
        safe["payload"], move_["payload"],
        "safe_default returned storage.moves[1]"
    );
}

/// Rule: `score` answering with a storage table decides the result — it is
/// not an empty table (which would end every match in a draw).
#[test]
fn score_carries_a_storage_table() {
    let mut room = room_of("answers-score", GAME, &game());
    let press = json!({"type": "button.press", "source": {"kind": "player", "playerId": "p1"},
        "payload": {"entityId": "go"}});
    room.submit_json(press, &mut Vec::new()).expect("submit");
    let result: Value =
        serde_json::from_str(&room.match_result().expect("the match ended")).expect("json");
    assert_eq!(result["scores"], json!({"a": 3, "b": 7}), "{result}");
}

/// Rule: a sensing tool's answer read from storage reaches the seat whole.
#[test]
fn a_sensing_answer_carries_a_storage_table() {
    let mut room = room_of("answers-sense", GAME, &game());
    let sense = json!({"type": "match.sense", "source": {"kind": "player", "playerId": "p1"},
        "payload": {"name": "peek", "input": {}}});
    let mut out = Vec::new();
    room.submit_json(sense, &mut out).expect("submit");
    let seen = room.observation(&Viewer::Seat("a".into())).to_string();
    let all = format!("{}{}", String::from_utf8_lossy(&out), seen);
    assert!(
        all.contains(r#""hint":[1,2,3]"#),
        "the sensed answer holds storage.sensed: {all}"
    );
}

/// Rule: a value the engine cannot carry is refused with its key path,
/// never dropped: a function deep in a view names where it sits (a failed
/// view is null for the viewer; the failure goes to the designer).
#[test]
fn what_cannot_be_carried_is_named_by_its_key_path() {
    let script = r#"
function observe(seat) return { hand = { "x", { bad = print } } } end
function public_view() return { totals = { ["two words"] = 0/0 } } end
"#;
    let mut room = room_of("answers-bad", script, &game());
    let seat = room.observation(&Viewer::Seat("a".into()));
    assert_eq!(own_view(&seat), &Value::Null, "a failed view is null");
    let spectator = room.observation(&Viewer::Spectator);
    assert_eq!(own_view(&spectator), &Value::Null, "a failed view is null");
    let faults = room.take_faults().join("\n");
    assert!(
        faults.contains("at `.hand[2].bad`: a function has no canonical form"),
        "{faults}"
    );
    assert!(
        faults.contains(r#"at `.totals["two words"]`: numbers must be finite"#),
        "{faults}"
    );
}

/// Rule: a storage table returned counts toward an answer's 100,000
/// values, as the same table built in Lua does.
#[test]
fn a_storage_table_returned_counts_toward_the_answer_cap() {
    let script = r#"
function on_start(event)
  local t = {}
  for i = 1, 120000 do t[i] = i end
  storage.big = t
end
function public_view() return storage.big end
"#;
    let mut game = game();
    game["limits"] = json!({"instructionsMax": 60_000_000});
    let mut room = room_of("answers-cap", script, &game);
    let spectator = room.observation(&Viewer::Spectator);
    assert_eq!(own_view(&spectator), &Value::Null, "over the cap: no view");
    let faults = room.take_faults().join("\n");
    assert!(faults.contains("at most 100000 values"), "{faults}");
}
