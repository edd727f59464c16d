//! Conformance: system.game_start, system.player_joined, system.player_left,
//! system.seat_assign (registry "System actions").

mod common;

use common::*;
use digipology_kernel::{state_from_game, Kernel, NoScripts};
use serde_json::json;

fn fresh() -> Kernel {
    Kernel::new(state_from_game(&standard_game(), 1).expect("loads"))
}

#[test]
fn game_start_emits_game_started_with_settings() {
    let mut k = fresh();
    let ev = accept(&mut k, system("system.game_start", json!({})));
    assert_eq!(
        ev,
        vec![("game.started".into(), json!({"settings": {"mode": "test"}}))]
    );
}

#[test]
fn game_start_settings_replace_room_start_settings() {
    // "When present, settings replaces canonical room-start settings."
    let mut k = fresh();
    let ev = accept(
        &mut k,
        system(
            "system.game_start",
            json!({"settings": {"sandbox": true, "n": 2}}),
        ),
    );
    assert_eq!(ev[0].1, json!({"settings": {"sandbox": true, "n": 2}}));
    assert!(!k.state().settings.contains_key("mode"));
}

#[test]
fn game_start_rejections() {
    // Allowed source: system.
    reject(
        &mut fresh(),
        player("p1", "system.game_start", json!({})),
        "source_not_allowed",
    );
    reject(
        &mut fresh(),
        script("system.game_start", json!({})),
        "source_not_allowed",
    );
    // onlyKeys.
    reject(
        &mut fresh(),
        system("system.game_start", json!({"seed": 1})),
        "unknown_key",
    );
    // "nested values are not accepted".
    reject(
        &mut fresh(),
        system("system.game_start", json!({"settings": {"a": {"b": 1}}})),
        "invalid_value",
    );
    reject(
        &mut fresh(),
        system("system.game_start", json!({"settings": {"a": [1]}})),
        "invalid_value",
    );
    reject(
        &mut fresh(),
        system("system.game_start", json!({"settings": {"a": null}})),
        "invalid_value",
    );
    reject(
        &mut fresh(),
        system("system.game_start", json!({"settings": 3})),
        "invalid_type",
    );
    // "Requires sequence zero."
    let mut k = fresh();
    accept(&mut k, system("system.game_start", json!({})));
    reject(
        &mut k,
        system("system.game_start", json!({})),
        "sequence_not_zero",
    );
}

#[test]
fn rejected_game_start_at_zero_still_consumes_sequence_zero() {
    let mut k = fresh();
    reject(
        &mut k,
        system("system.game_start", json!({"bogus": 1})),
        "unknown_key",
    );
    // Sequence 0 is gone: a correct game_start now arrives at sequence 1.
    reject(
        &mut k,
        system("system.game_start", json!({})),
        "sequence_not_zero",
    );
}

#[test]
fn player_joined_stores_name_and_emits() {
    let mut k = started(&standard_game(), 1);
    let ev = accept(
        &mut k,
        system(
            "system.player_joined",
            json!({"playerId": "ann", "name": "Ann"}),
        ),
    );
    assert_eq!(
        ev,
        vec![(
            "player.joined".into(),
            json!({"playerId": "ann", "name": "Ann"})
        )]
    );
    assert_eq!(k.state().players["ann"].name.as_deref(), Some("Ann"));
    let ev = accept(
        &mut k,
        system("system.player_joined", json!({"playerId": "bob"})),
    );
    assert_eq!(ev[0].1, json!({"playerId": "bob", "name": null}));
}

#[test]
fn player_joined_rejections() {
    let mut k = table();
    reject(
        &mut k,
        player("p1", "system.player_joined", json!({"playerId": "x"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        system(
            "system.player_joined",
            json!({"playerId": "x", "seat": "n"}),
        ),
        "unknown_key",
    );
    reject(
        &mut k,
        system("system.player_joined", json!({})),
        "missing_field",
    );
    reject(
        &mut k,
        system("system.player_joined", json!({"playerId": 7})),
        "invalid_type",
    );
    // "Requires a non-empty ... playerId".
    reject(
        &mut k,
        system("system.player_joined", json!({"playerId": ""})),
        "invalid_value",
    );
    reject(
        &mut k,
        system("system.player_joined", json!({"playerId": "x", "name": 3})),
        "invalid_type",
    );
    // "previously unused playerId".
    reject(
        &mut k,
        system("system.player_joined", json!({"playerId": "p1"})),
        "player_exists",
    );
}

#[test]
fn player_left_releases_held_in_id_order_then_clears_seats_then_leaves() {
    let mut k = table();
    accept(
        &mut k,
        system(
            "system.seat_assign",
            json!({"playerId": "p1", "seatId": "south"}),
        ),
    );
    // Grab in reverse id order so the release order must come from sorting.
    accept(
        &mut k,
        player("p1", "entity.grab", json!({"entityId": "d6"})),
    );
    accept(
        &mut k,
        player("p1", "entity.grab", json!({"entityId": "card"})),
    );
    accept(
        &mut k,
        player("p2", "entity.grab", json!({"entityId": "c1"})),
    );
    let ev = accept(
        &mut k,
        system("system.player_left", json!({"playerId": "p1"})),
    );
    assert_eq!(
        ev,
        vec![
            (
                "entity.dropped".into(),
                json!({"entityId": "card", "playerId": "p1"})
            ),
            (
                "entity.dropped".into(),
                json!({"entityId": "d6", "playerId": "p1"})
            ),
            (
                "seat.left".into(),
                json!({"seatId": "north", "playerId": "p1"})
            ),
            (
                "seat.left".into(),
                json!({"seatId": "south", "playerId": "p1"})
            ),
            ("player.left".into(), json!({"playerId": "p1"})),
        ]
    );
    let st = k.state();
    assert!(!st.players.contains_key("p1"));
    assert_eq!(st.seats["north"], None);
    assert_eq!(st.entity("card").and_then(|e| e.held_by.clone()), None);
    // Another player's hold is untouched.
    assert_eq!(
        st.entity("c1")
            .and_then(|e| e.held_by.as_deref().map(str::to_owned)),
        Some("p2".into())
    );
}

#[test]
fn player_left_with_nothing_held_emits_only_player_left() {
    let mut k = table();
    let ev = accept(
        &mut k,
        system("system.player_left", json!({"playerId": "p2"})),
    );
    assert_eq!(ev, vec![("player.left".into(), json!({"playerId": "p2"}))]);
}

#[test]
fn player_left_rejections() {
    let mut k = table();
    reject(
        &mut k,
        script("system.player_left", json!({"playerId": "p1"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        system("system.player_left", json!({"playerId": "p1", "x": 1})),
        "unknown_key",
    );
    reject(
        &mut k,
        system("system.player_left", json!({})),
        "missing_field",
    );
    // "Requires an existing player."
    reject(
        &mut k,
        system("system.player_left", json!({"playerId": "ghost"})),
        "player_not_found",
    );
}

#[test]
fn seat_assign_creates_or_replaces_and_emits() {
    let mut k = table();
    // An existing seat's playerId is replaced.
    let ev = accept(
        &mut k,
        system(
            "system.seat_assign",
            json!({"playerId": "p2", "seatId": "north"}),
        ),
    );
    assert_eq!(
        ev,
        vec![(
            "seat.assigned".into(),
            json!({"seatId": "north", "playerId": "p2"})
        )]
    );
    assert_eq!(k.state().seats["north"].as_deref(), Some("p2"));
    // A previously absent seat is created.
    accept(
        &mut k,
        system(
            "system.seat_assign",
            json!({"playerId": "p1", "seatId": "east"}),
        ),
    );
    assert_eq!(k.state().seats["east"].as_deref(), Some("p1"));
}

#[test]
fn seat_assign_rejections() {
    let mut k = table();
    reject(
        &mut k,
        player(
            "p1",
            "system.seat_assign",
            json!({"playerId": "p1", "seatId": "s"}),
        ),
        "source_not_allowed",
    );
    reject(
        &mut k,
        system(
            "system.seat_assign",
            json!({"playerId": "p1", "seatId": "s", "x": 0}),
        ),
        "unknown_key",
    );
    reject(
        &mut k,
        system("system.seat_assign", json!({"seatId": "s"})),
        "missing_field",
    );
    reject(
        &mut k,
        system("system.seat_assign", json!({"playerId": "p1"})),
        "missing_field",
    );
    // "Requires non-empty IDs".
    reject(
        &mut k,
        system("system.seat_assign", json!({"playerId": "", "seatId": "s"})),
        "invalid_value",
    );
    reject(
        &mut k,
        system(
            "system.seat_assign",
            json!({"playerId": "p1", "seatId": ""}),
        ),
        "invalid_value",
    );
    // "and an existing player".
    reject(
        &mut k,
        system(
            "system.seat_assign",
            json!({"playerId": "ghost", "seatId": "s"}),
        ),
        "player_not_found",
    );
}

#[test]
fn player_source_must_be_a_joined_player() {
    let mut k = table();
    reject(
        &mut k,
        player(
            "ghost",
            "counter.add",
            json!({"entityId": "score", "amount": 1}),
        ),
        "unknown_player",
    );
    let _ = NoScripts;
}
