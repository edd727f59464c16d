//! Conformance: entity.grab, entity.flip, entity.set_locked.

mod common;

use common::*;
use serde_json::json;

#[test]
fn grab_holds_and_emits() {
    let mut k = table();
    let ev = accept(
        &mut k,
        player("p1", "entity.grab", json!({"entityId": "card"})),
    );
    assert_eq!(
        ev,
        vec![(
            "entity.grabbed".into(),
            json!({"entityId": "card", "playerId": "p1"})
        )]
    );
    assert_eq!(
        k.state()
            .entity("card")
            .and_then(|e| e.held_by.as_deref().map(str::to_owned)),
        Some("p1".into())
    );
}

#[test]
fn grab_of_a_stack_top_is_allowed() {
    // "either be outside a stack or be its canonical top"
    let mut k = table();
    let ev = accept(
        &mut k,
        player("p1", "entity.grab", json!({"entityId": "s_top"})),
    );
    assert_eq!(ev[0].0, "entity.grabbed");
}

#[test]
fn grab_rejections_in_precedence_order() {
    let mut k = table();
    let g = |id: &str| player("p1", "entity.grab", json!({"entityId": id}));
    // Allowed source: player.
    reject(
        &mut k,
        script("entity.grab", json!({"entityId": "card"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        system("entity.grab", json!({"entityId": "card"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        player("p1", "entity.grab", json!({"entityId": "card", "to": 1})),
        "unknown_key",
    );
    reject(
        &mut k,
        player("p1", "entity.grab", json!({})),
        "missing_field",
    );
    reject(
        &mut k,
        player("p1", "entity.grab", json!({"entityId": 5})),
        "invalid_type",
    );
    reject(&mut k, g("nope"), "entity_not_found");
    // "must have an enabled grabbable component"
    reject(&mut k, g("plain"), "missing_component");
    reject(&mut k, g("disabled_card"), "component_disabled");
    // "be unheld"
    accept(
        &mut k,
        player("p2", "entity.grab", json!({"entityId": "card"})),
    );
    reject(&mut k, g("card"), "already_held");
    // "and unlocked"
    reject(&mut k, g("locked_card"), "locked");
    // "either be outside a stack or be its canonical top"
    reject(&mut k, g("s_bottom"), "not_stack_top");
}

#[test]
fn flip_toggles_and_emits() {
    let mut k = table();
    let ev = accept(
        &mut k,
        player("p1", "entity.flip", json!({"entityId": "card"})),
    );
    assert_eq!(
        ev,
        vec![(
            "entity.flipped".into(),
            json!({"entityId": "card", "flipped": true})
        )]
    );
    let ev = accept(&mut k, script("entity.flip", json!({"entityId": "card"})));
    assert_eq!(ev[0].1["flipped"], json!(false));
    assert_eq!(
        component(&k, "card", "flippable"),
        json!({"flipped": false})
    );
}

#[test]
fn flip_rejections() {
    let mut k = table();
    reject(
        &mut k,
        system("entity.flip", json!({"entityId": "card"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        player(
            "p1",
            "entity.flip",
            json!({"entityId": "card", "face": "up"}),
        ),
        "unknown_key",
    );
    reject(
        &mut k,
        player("p1", "entity.flip", json!({})),
        "missing_field",
    );
    reject(
        &mut k,
        player("p1", "entity.flip", json!({"entityId": "nope"})),
        "entity_not_found",
    );
    // "Requires a flippable component"
    reject(
        &mut k,
        player("p1", "entity.flip", json!({"entityId": "plain"})),
        "missing_component",
    );
}

#[test]
fn set_locked_from_script_changes_state_without_an_event() {
    // The registry's emission matrix lists no event for entity.set_locked.
    let mut k = table();
    let before = k.state_hash();
    let ev = accept(
        &mut k,
        script(
            "entity.set_locked",
            json!({"entityId": "lockbox", "locked": true}),
        ),
    );
    assert!(ev.is_empty());
    assert_ne!(k.state_hash(), before);
    assert_eq!(
        component(&k, "lockbox", "lockable"),
        json!({"locked": true})
    );
    // "A locked grabbable is rejected by entity.grab."
    reject(
        &mut k,
        player("p1", "entity.grab", json!({"entityId": "lockbox"})),
        "locked",
    );
}

#[test]
fn set_locked_from_player_only_in_sandbox() {
    let a = player(
        "p1",
        "entity.set_locked",
        json!({"entityId": "lockbox", "locked": true}),
    );
    let mut k = table();
    reject(&mut k, a.clone(), "source_not_allowed");
    // settings.sandbox must be exactly true.
    let mut game = standard_game();
    game["settings"] = json!({"sandbox": "yes"});
    let mut k = started(&game, 1);
    accept(
        &mut k,
        system("system.player_joined", json!({"playerId": "p1"})),
    );
    reject(&mut k, a.clone(), "source_not_allowed");
    game["settings"] = json!({"sandbox": true});
    let mut k = started(&game, 1);
    accept(
        &mut k,
        system("system.player_joined", json!({"playerId": "p1"})),
    );
    accept(&mut k, a);
    assert_eq!(
        component(&k, "lockbox", "lockable"),
        json!({"locked": true})
    );
}

#[test]
fn set_locked_rejections() {
    let mut k = table();
    reject(
        &mut k,
        system(
            "entity.set_locked",
            json!({"entityId": "lockbox", "locked": true}),
        ),
        "source_not_allowed",
    );
    reject(
        &mut k,
        script(
            "entity.set_locked",
            json!({"entityId": "lockbox", "locked": true, "x": 1}),
        ),
        "unknown_key",
    );
    reject(
        &mut k,
        script("entity.set_locked", json!({"entityId": "lockbox"})),
        "missing_field",
    );
    reject(
        &mut k,
        script(
            "entity.set_locked",
            json!({"entityId": "lockbox", "locked": "yes"}),
        ),
        "invalid_type",
    );
    reject(
        &mut k,
        script(
            "entity.set_locked",
            json!({"entityId": "nope", "locked": true}),
        ),
        "entity_not_found",
    );
    // "Requires a lockable component."
    reject(
        &mut k,
        script(
            "entity.set_locked",
            json!({"entityId": "card", "locked": true}),
        ),
        "missing_component",
    );
}
