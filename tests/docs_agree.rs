//! The docs agree with the program (issue 37, item 8): each test names the
//! sentence of the docs it holds the program to.

mod common;
#[path = "common/serving.rs"]
mod serving;

use common::{scratch, seated_room, sends};
use digipology_kernel::observe::Viewer;
use serde_json::{json, Value};

/// A seated room (p1, p2) of `game` with `script` as its `main.lua`.
fn room_of(name: &str, game: &Value, script: &str) -> digipology_room::room::Room {
    let dir = scratch(name);
    std::fs::write(dir.join("main.lua"), script).expect("write script");
    seated_room(&dir, game, 3, &["p1", "p2"])
}

/// docs/match.md, Order of checks, 4: `not_in_phase` is charged
/// `invalidAction`, in a declared phase that lists no tools too; it is free
/// only when the game names a phase `match.phases` does not declare.
#[test]
fn not_in_phase_is_charged_unless_the_game_named_an_undeclared_phase() {
    let game = json!({
        "seats": ["a", "b"],
        "match": {
            "resources": {"retries": {"amount": 5, "reset": "match", "visibility": "public"}},
            "metering": {"invalidAction": {"resource": "retries", "cost": 1}},
            "phases": {"play": ["button.press"], "done": []}
        },
        "entities": [{"id": "go", "components": {"button": {}}}],
        "scripts": [{"id": "main", "file": "main.lua", "bindings": [{"id": "global"}]}]
    });
    let retries = |room: &mut digipology_room::room::Room| {
        room.observation(&Viewer::Seat("a".into()))["resources"]["a"]["retries"].clone()
    };
    let mut room = room_of(
        "agree-phase-done",
        &game,
        "function current_phase() return 'done' end",
    );
    assert_eq!(
        sends(&mut room, "p1", "button.press", json!({"entityId": "go"})),
        "not_in_phase"
    );
    assert_eq!(
        retries(&mut room),
        json!(4),
        "a declared phase with no tools charges"
    );
    let mut room = room_of(
        "agree-phase-bogus",
        &game,
        "function current_phase() return 'bogus' end",
    );
    assert_eq!(
        sends(&mut room, "p1", "button.press", json!({"entityId": "go"})),
        "not_in_phase"
    );
    assert_eq!(
        retries(&mut room),
        json!(5),
        "an undeclared phase is the game's bug: free"
    );
}

/// docs/formats.md, Rejection codes: an empty `entityId` is
/// `invalid_value` in a match and outside one alike.
#[test]
fn an_empty_entity_id_is_the_same_refusal_in_and_out_of_a_match() {
    let with_match = json!({
        "seats": ["a", "b"],
        "match": {},
        "entities": [{"id": "go", "components": {"button": {}}}],
        "scripts": [{"id": "main", "file": "main.lua", "bindings": [{"id": "global"}]}]
    });
    let mut without = with_match.clone();
    without.as_object_mut().expect("object").remove("match");
    for game in [with_match, without] {
        let mut room = room_of("agree-empty-id", &game, "");
        assert_eq!(
            sends(&mut room, "p1", "button.press", json!({"entityId": ""})),
            "invalid_value",
            "{game}"
        );
    }
}

/// docs/server.md, Errors and limits: every refusal's code is in the
/// table — `limit=0` is `invalid_value`, and `1e400` (JSON, but no finite
/// number) is `not_finite`, not "the body is not JSON".
#[test]
fn the_servers_refusals_are_the_codes_its_table_lists() {
    let data = scratch("agree-server");
    let game = common::root().join("examples/tic-tac-toe");
    let server = serving::Server::start(&[game], &data.join("d"), &[]);
    let code = |method: &str, path: &str, body: Option<&[u8]>| {
        let r = serving::request(&server.addr, method, path, None, body);
        assert_eq!(
            r.status,
            400,
            "{path}: {}",
            String::from_utf8_lossy(&r.body)
        );
        r.json()["code"].as_str().unwrap_or("").to_owned()
    };
    let doc = std::fs::read_to_string(common::root().join("docs/server.md")).expect("server.md");
    let table = &doc[doc.find("## Errors and limits").expect("the table")..];
    for (method, path, body, expected) in [
        (
            "GET",
            "/games/tic-tac-toe/matches?limit=0",
            None,
            "invalid_value",
        ),
        (
            "GET",
            "/games/tic-tac-toe/matches?limit=501",
            None,
            "invalid_value",
        ),
        (
            "POST",
            "/games/tic-tac-toe/matches",
            Some(&br#"{"seats": 1e400}"#[..]),
            "not_finite",
        ),
        (
            "POST",
            "/games/tic-tac-toe/matches",
            Some(&b"{"[..]),
            "malformed_json",
        ),
    ] {
        let got = code(method, path, body);
        assert_eq!(got, expected, "{method} {path}");
        assert!(
            table.contains(&format!("`{got}`")),
            "{got} is in the errors table"
        );
    }
}
