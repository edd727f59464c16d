//! Conformance: deck.shuffle, deck.draw_to_container.

mod common;

use common::*;
use serde_json::json;

fn items(k: &digipology_kernel::Kernel, id: &str) -> serde_json::Value {
    component(k, id, "container")["items"].clone()
}

#[test]
fn shuffle_reorders_with_the_canonical_rng_and_emits() {
    let mut k = table();
    let ev = accept(
        &mut k,
        player("p1", "deck.shuffle", json!({"deckId": "deck"})),
    );
    assert_eq!(
        ev,
        vec![("deck.shuffled".into(), json!({"deckId": "deck"}))]
    );
    let mut after: Vec<String> = serde_json::from_value(items(&k, "deck")).expect("ids");
    after.sort();
    assert_eq!(after, vec!["c1", "c2", "c3"]);
}

#[test]
fn shuffle_order_depends_on_the_seed_only() {
    let order = |seed: u64| {
        let mut game = standard_game();
        let ids: Vec<String> = (0..20).map(|i| format!("x{i:02}")).collect();
        let entities = game["entities"].as_array_mut().expect("array");
        for id in &ids {
            entities.push(json!({"id": id, "components": {}}));
        }
        entities
            .push(json!({"id": "big", "components": {"deck": {}, "container": {"items": ids}}}));
        let mut k = started(&game, seed);
        accept(&mut k, script("deck.shuffle", json!({"deckId": "big"})));
        items(&k, "big")
    };
    assert_eq!(order(5), order(5));
    assert_ne!(order(5), order(6));
}

#[test]
fn shuffle_rejections() {
    let mut k = table();
    reject(
        &mut k,
        system("deck.shuffle", json!({"deckId": "deck"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        script("deck.shuffle", json!({"deckId": "deck", "order": [1]})),
        "unknown_key",
    );
    reject(&mut k, script("deck.shuffle", json!({})), "missing_field");
    reject(
        &mut k,
        script("deck.shuffle", json!({"deckId": "nope"})),
        "entity_not_found",
    );
    // "Requires an entity with enabled deck and container components."
    reject(
        &mut k,
        script("deck.shuffle", json!({"deckId": "hand"})),
        "missing_component",
    );
    reject(
        &mut k,
        script("deck.shuffle", json!({"deckId": "deck_off"})),
        "component_disabled",
    );
    reject(
        &mut k,
        script("deck.shuffle", json!({"deckId": "deck_no_container"})),
        "missing_component",
    );
}

#[test]
fn draw_moves_top_cards_in_draw_order_and_appends() {
    let mut k = table();
    let ev = accept(
        &mut k,
        player(
            "p1",
            "deck.draw_to_container",
            json!({"deckId": "deck", "target": "hand", "count": 2}),
        ),
    );
    // "The last deck item is canonical top; each drawn card is appended."
    assert_eq!(
        ev,
        vec![(
            "deck.drawn".into(),
            json!({"deckId": "deck", "target": "hand", "entityIds": ["c3", "c2"]})
        )]
    );
    assert_eq!(items(&k, "deck"), json!(["c1"]));
    assert_eq!(items(&k, "hand"), json!(["c3", "c2"]));
    accept(
        &mut k,
        script(
            "deck.draw_to_container",
            json!({"deckId": "deck", "target": "hand", "count": 1}),
        ),
    );
    assert_eq!(items(&k, "hand"), json!(["c3", "c2", "c1"]));
}

#[test]
fn draw_rejections_never_draw_partially() {
    let mut k = table();
    let d = |payload| script("deck.draw_to_container", payload);
    reject(
        &mut k,
        system(
            "deck.draw_to_container",
            json!({"deckId": "deck", "target": "hand", "count": 1}),
        ),
        "source_not_allowed",
    );
    reject(
        &mut k,
        d(json!({"deckId": "deck", "target": "hand", "count": 1, "x": 0})),
        "unknown_key",
    );
    reject(
        &mut k,
        d(json!({"deckId": "deck", "target": "hand"})),
        "missing_field",
    );
    reject(
        &mut k,
        d(json!({"deckId": "deck", "target": "hand", "count": "2"})),
        "invalid_type",
    );
    // "count must be a positive safe integer."
    reject(
        &mut k,
        d(json!({"deckId": "deck", "target": "hand", "count": 0})),
        "invalid_value",
    );
    reject(
        &mut k,
        d(json!({"deckId": "deck", "target": "hand", "count": -1})),
        "invalid_value",
    );
    reject(
        &mut k,
        d(json!({"deckId": "deck", "target": "hand", "count": 1.5})),
        "invalid_value",
    );
    reject(
        &mut k,
        d(json!({"deckId": "deck", "target": "hand", "count": 9007199254740992u64})),
        "invalid_value",
    );
    // "The deck and target must differ"
    reject(
        &mut k,
        d(json!({"deckId": "deck", "target": "deck", "count": 1})),
        "same_container",
    );
    // "both must be valid containers"
    reject(
        &mut k,
        d(json!({"deckId": "nope", "target": "hand", "count": 1})),
        "entity_not_found",
    );
    reject(
        &mut k,
        d(json!({"deckId": "hand", "target": "bag", "count": 1})),
        "missing_component",
    );
    reject(
        &mut k,
        d(json!({"deckId": "deck_off", "target": "hand", "count": 1})),
        "component_disabled",
    );
    reject(
        &mut k,
        d(json!({"deckId": "deck", "target": "nope", "count": 1})),
        "entity_not_found",
    );
    reject(
        &mut k,
        d(json!({"deckId": "deck", "target": "card", "count": 1})),
        "missing_component",
    );
    // "the complete draw must fit ... available cards"
    reject(
        &mut k,
        d(json!({"deckId": "deck", "target": "hand", "count": 4})),
        "insufficient_cards",
    );
    // "... must fit the target": bag has capacity 2, the deck holds 3.
    reject(
        &mut k,
        d(json!({"deckId": "deck", "target": "bag", "count": 3})),
        "capacity_exceeded",
    );
    accept(
        &mut k,
        d(json!({"deckId": "deck", "target": "bag", "count": 1})),
    );
    reject(
        &mut k,
        d(json!({"deckId": "deck", "target": "bag", "count": 2})),
        "capacity_exceeded",
    );
    assert_eq!(items(&k, "bag"), json!(["c3"]));
    assert_eq!(items(&k, "deck"), json!(["c1", "c2"]));
}

/// Rollback after a shuffle restores the order without a saved copy of the
/// list: the undo record is the RNG state, and rollback replays the swaps.
#[test]
fn a_rolled_back_shuffle_restores_the_order_and_the_hash() {
    use digipology_kernel::{ClosureHost, ScriptErrorKind, ScriptFailure};
    let mut game = standard_game();
    let ids: Vec<String> = (0..40).map(|i| format!("x{i:02}")).collect();
    let entities = game["entities"].as_array_mut().expect("array");
    for id in &ids {
        entities.push(json!({"id": id, "components": {}}));
    }
    entities.push(json!({"id": "big", "components": {"deck": {}, "container": {"items": ids}}}));
    let mut k = started(&game, 3);
    accept(
        &mut k,
        system("system.player_joined", json!({"playerId": "p1"})),
    );
    let before = (items(&k, "big"), k.state_hash());
    let mut host = ClosureHost::new().with_handler_for(&["button.pressed"], |ctx, _| {
        for _ in 0..3 {
            ctx.submit("main", "global", "deck.shuffle", json!({"deckId": "big"}))
                .map_err(|r| ScriptFailure {
                    script_id: "main".into(),
                    binding_id: "global".into(),
                    function: "on_button_pressed".into(),
                    line: None,
                    message: r.to_string(),
                    kind: ScriptErrorKind::Subcommand,
                })?;
        }
        Err(ScriptFailure {
            script_id: "main".into(),
            binding_id: "global".into(),
            function: "on_button_pressed".into(),
            line: Some(1),
            message: "changed my mind".into(),
            kind: ScriptErrorKind::Runtime,
        })
    });
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(!out.accepted());
    let seq = k.state().sequence;
    assert_eq!((items(&k, "big"), k.state_hash()), before, "seq {seq}");
    // The same shuffles, committed, do reorder the deck.
    accept(&mut k, script("deck.shuffle", json!({"deckId": "big"})));
    assert_ne!(items(&k, "big"), before.0);
}
