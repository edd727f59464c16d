//! Conformance: die.roll, counter.set, counter.add.

mod common;

use common::*;
use serde_json::json;

#[test]
fn roll_standard_d6_falls_back_to_one_through_six() {
    let mut k = table();
    let mut seen = [false; 6];
    for _ in 0..200 {
        let ev = accept(&mut k, player("p1", "die.roll", json!({"entityId": "d6"})));
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].0, "die.rolled");
        let index = ev[0].1["index"].as_u64().expect("index");
        assert_eq!(ev[0].1["value"], json!(index + 1));
        assert_eq!(ev[0].1["entityId"], json!("d6"));
        seen[usize::try_from(index).expect("small")] = true;
        assert_eq!(component(&k, "d6", "die")["value"], json!(index + 1));
    }
    assert!(seen.iter().all(|s| *s));
}

#[test]
fn roll_uses_given_faces() {
    let mut k = table();
    let ev = accept(&mut k, script("die.roll", json!({"entityId": "coin"})));
    let v = ev[0].1["value"].as_str().expect("string face").to_owned();
    assert!(v == "heads" || v == "tails");
}

#[test]
fn roll_by_the_holder_is_allowed() {
    let mut k = table();
    accept(
        &mut k,
        player("p1", "entity.grab", json!({"entityId": "d6"})),
    );
    accept(&mut k, player("p1", "die.roll", json!({"entityId": "d6"})));
}

#[test]
fn roll_rejections() {
    let mut k = table();
    reject(
        &mut k,
        system("die.roll", json!({"entityId": "d6"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        player("p1", "die.roll", json!({"entityId": "d6", "value": 6})),
        "unknown_key",
    );
    reject(&mut k, player("p1", "die.roll", json!({})), "missing_field");
    reject(
        &mut k,
        player("p1", "die.roll", json!({"entityId": "nope"})),
        "entity_not_found",
    );
    reject(
        &mut k,
        player("p1", "die.roll", json!({"entityId": "card"})),
        "missing_component",
    );
    // "A die held by another player rejects."
    accept(
        &mut k,
        player("p2", "entity.grab", json!({"entityId": "d6"})),
    );
    reject(
        &mut k,
        player("p1", "die.roll", json!({"entityId": "d6"})),
        "held_by_other",
    );
}

#[test]
fn die_of_other_kind_without_faces_is_refused_at_load() {
    // "Requires a die with a non-empty ordered list of faces; standard_d6
    // falls back": any other kind with no faces cannot be built.
    let mut game = standard_game();
    game["entities"]
        .as_array_mut()
        .expect("array")
        .push(json!({"id": "d20", "components": {"die": {"kind": "d20"}}}));
    let err = digipology_kernel::state_from_game(&game, 1).expect_err("no faces");
    assert!(err.to_string().contains("d20"), "{err}");
}

#[test]
fn counter_set_clamps_and_emits() {
    let mut k = table();
    let ev = accept(
        &mut k,
        player(
            "p1",
            "counter.set",
            json!({"entityId": "score", "value": 7}),
        ),
    );
    assert_eq!(
        ev,
        vec![(
            "counter.changed".into(),
            json!({"entityId": "score", "value": 7, "previous": 5})
        )]
    );
    let ev = accept(
        &mut k,
        player(
            "p1",
            "counter.set",
            json!({"entityId": "score", "value": 99}),
        ),
    );
    assert_eq!(
        ev[0].1,
        json!({"entityId": "score", "value": 10, "previous": 7})
    );
    let ev = accept(
        &mut k,
        script("counter.set", json!({"entityId": "score", "value": -3.5})),
    );
    assert_eq!(
        ev[0].1,
        json!({"entityId": "score", "value": 0, "previous": 10})
    );
}

#[test]
fn counter_set_normalizes_negative_zero() {
    let mut k = table();
    let out = k.process_line(
        r#"{"type":"counter.set","source":{"kind":"player","playerId":"p1"},"payload":{"entityId":"free","value":-0.0}}"#,
        &mut digipology_kernel::NoScripts,
    );
    assert!(out.accepted());
    let line = out.events[0].to_json_line();
    assert!(line.contains("\"value\":0"), "{line}");
    assert!(!line.contains("-0"), "{line}");
    let st = k
        .state()
        .entity("free")
        .and_then(|e| e.components.counter)
        .expect("counter");
    assert!(st.value.is_sign_positive());
}

#[test]
fn counter_set_rejections() {
    let mut k = table();
    reject(
        &mut k,
        system("counter.set", json!({"entityId": "score", "value": 1})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        player(
            "p1",
            "counter.set",
            json!({"entityId": "score", "value": 1, "min": 0}),
        ),
        "unknown_key",
    );
    reject(
        &mut k,
        player("p1", "counter.set", json!({"entityId": "score"})),
        "missing_field",
    );
    reject(
        &mut k,
        player(
            "p1",
            "counter.set",
            json!({"entityId": "score", "value": "1"}),
        ),
        "invalid_type",
    );
    reject(
        &mut k,
        player("p1", "counter.set", json!({"entityId": "nope", "value": 1})),
        "entity_not_found",
    );
    // "Requires ... a counter component."
    reject(
        &mut k,
        player("p1", "counter.set", json!({"entityId": "card", "value": 1})),
        "missing_component",
    );
}

#[test]
fn counter_add_adds_negative_amounts_and_clamps() {
    let mut k = table();
    let ev = accept(
        &mut k,
        player(
            "p1",
            "counter.add",
            json!({"entityId": "score", "amount": 2}),
        ),
    );
    assert_eq!(
        ev,
        vec![(
            "counter.changed".into(),
            json!({"entityId": "score", "value": 7, "previous": 5})
        )]
    );
    // "Subtraction is represented by a negative amount"
    let ev = accept(
        &mut k,
        player(
            "p1",
            "counter.add",
            json!({"entityId": "score", "amount": -20}),
        ),
    );
    assert_eq!(
        ev[0].1,
        json!({"entityId": "score", "value": 0, "previous": 7})
    );
    let ev = accept(
        &mut k,
        script("counter.add", json!({"entityId": "free", "amount": 0.25})),
    );
    assert_eq!(
        ev[0].1,
        json!({"entityId": "free", "value": 0.25, "previous": 0})
    );
}

#[test]
fn counter_add_rejections() {
    let mut k = table();
    // "there is no counter.subtract action"
    reject(
        &mut k,
        player(
            "p1",
            "counter.subtract",
            json!({"entityId": "score", "amount": 1}),
        ),
        "unknown_action_type",
    );
    reject(
        &mut k,
        system("counter.add", json!({"entityId": "score", "amount": 1})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        player(
            "p1",
            "counter.add",
            json!({"entityId": "score", "amount": 1, "x": 1}),
        ),
        "unknown_key",
    );
    reject(
        &mut k,
        player("p1", "counter.add", json!({"entityId": "score"})),
        "missing_field",
    );
    reject(
        &mut k,
        player(
            "p1",
            "counter.add",
            json!({"entityId": "score", "amount": null}),
        ),
        "invalid_type",
    );
    reject(
        &mut k,
        player(
            "p1",
            "counter.add",
            json!({"entityId": "nope", "amount": 1}),
        ),
        "entity_not_found",
    );
    reject(
        &mut k,
        player(
            "p1",
            "counter.add",
            json!({"entityId": "card", "amount": 1}),
        ),
        "missing_component",
    );
    // "a finite pre-clamp sum"
    accept(
        &mut k,
        player(
            "p1",
            "counter.set",
            json!({"entityId": "free", "value": 1.7e308}),
        ),
    );
    reject(
        &mut k,
        player(
            "p1",
            "counter.add",
            json!({"entityId": "free", "amount": 1.7e308}),
        ),
        "non_finite_result",
    );
}

#[test]
fn non_finite_numbers_never_parse_as_numbers() {
    // JSON has no NaN/Infinity; an overflowing literal is malformed input.
    let mut k = table();
    let hash = k.state_hash();
    let out = k.process_line(
        r#"{"type":"counter.add","source":{"kind":"player","playerId":"p1"},"payload":{"entityId":"free","amount":1e999}}"#,
        &mut digipology_kernel::NoScripts,
    );
    assert_eq!(
        out.rejection().map(|r| r.code.as_str()),
        Some("malformed_action")
    );
    assert_eq!(k.state_hash(), hash);
}
