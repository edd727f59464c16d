//! The docs agree with the program (issue 37, item 8): each test names the
//! sentence of the docs it holds the program to.

mod common;

use common::scratch;
use digipology_kernel::observe::Viewer;
use serde_json::{json, Value};

fn room_of(name: &str, game: &Value, script: &str) -> digipology_room::room::Room {
    let dir = scratch(name);
    std::fs::write(dir.join("game.json"), game.to_string()).expect("write game");
    std::fs::write(dir.join("main.lua"), script).expect("write script");
    let package = digipology_room::package::Package::load(&dir).expect("game loads");
    let mut room = digipology_room::package::build_room(&package, 3, (None, None)).expect("room");
    let mut sink = Vec::new();
    room.start(&mut sink).expect("start");
    room.seat_players(&["p1".into(), "p2".into()], &package.seats(), &mut sink)
        .expect("seat");
    room
}

/// The rejection code of p1's `ty` action, or `accepted`.
fn p1_sends(room: &mut digipology_room::room::Room, ty: &str, payload: Value) -> String {
    let action =
        json!({"type": ty, "source": {"kind": "player", "playerId": "p1"}, "payload": payload});
    room.keep_events();
    room.submit_json(action, &mut Vec::new()).expect("submit");
    room.take_events()
        .iter()
        .find_map(|e| match &e.kind {
            digipology_kernel::EventKind::ActionRejected { rejection, .. } => {
                Some(rejection.code.as_str().to_owned())
            }
            _ => None,
        })
        .unwrap_or_else(|| "accepted".into())
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
        p1_sends(&mut room, "button.press", json!({"entityId": "go"})),
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
        p1_sends(&mut room, "button.press", json!({"entityId": "go"})),
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
            p1_sends(&mut room, "button.press", json!({"entityId": ""})),
            "invalid_value",
            "{game}"
        );
    }
}
