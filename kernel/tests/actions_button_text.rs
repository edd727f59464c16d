//! Conformance: button.press, text.set.

mod common;

use common::*;
use serde_json::json;

#[test]
fn press_emits_and_does_not_mutate_the_button() {
    let mut k = table();
    let before = k.state_hash();
    let ev = accept(
        &mut k,
        player("p2", "button.press", json!({"entityId": "btn"})),
    );
    assert_eq!(
        ev,
        vec![(
            "button.pressed".into(),
            json!({"entityId": "btn", "playerId": "p2"})
        )]
    );
    assert_eq!(k.state_hash(), before);
}

#[test]
fn press_rejections() {
    let mut k = table();
    reject(
        &mut k,
        script("button.press", json!({"entityId": "btn"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        system("button.press", json!({"entityId": "btn"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        player("p1", "button.press", json!({"entityId": "btn", "x": 1})),
        "unknown_key",
    );
    reject(
        &mut k,
        player("p1", "button.press", json!({})),
        "missing_field",
    );
    reject(
        &mut k,
        player("p1", "button.press", json!({"entityId": "nope"})),
        "entity_not_found",
    );
    // "Requires an enabled button component"
    reject(
        &mut k,
        player("p1", "button.press", json!({"entityId": "card"})),
        "missing_component",
    );
    reject(
        &mut k,
        player("p1", "button.press", json!({"entityId": "btn_off"})),
        "component_disabled",
    );
}

#[test]
fn text_set_stores_the_exact_string() {
    let mut k = table();
    let value = "Ünïcödé ✓ \"quoted\"\n";
    let ev = accept(
        &mut k,
        script("text.set", json!({"entityId": "sign", "value": value})),
    );
    assert_eq!(
        ev,
        vec![(
            "text.changed".into(),
            json!({"entityId": "sign", "value": value})
        )]
    );
    assert_eq!(component(&k, "sign", "text"), json!({"value": value}));
}

#[test]
fn text_set_accepts_exactly_4096_bytes() {
    let mut k = table();
    // 1,024 four-byte characters: 4,096 bytes, the limit.
    let value = "😀".repeat(1024);
    assert_eq!(value.len(), 4096);
    accept(
        &mut k,
        script("text.set", json!({"entityId": "sign", "value": value})),
    );
}

#[test]
fn text_set_rejections() {
    let mut k = table();
    reject(
        &mut k,
        player("p1", "text.set", json!({"entityId": "sign", "value": "x"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        system("text.set", json!({"entityId": "sign", "value": "x"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        script(
            "text.set",
            json!({"entityId": "sign", "value": "x", "font": "b"}),
        ),
        "unknown_key",
    );
    reject(
        &mut k,
        script("text.set", json!({"entityId": "sign"})),
        "missing_field",
    );
    reject(
        &mut k,
        script("text.set", json!({"entityId": "sign", "value": 5})),
        "invalid_type",
    );
    reject(
        &mut k,
        script("text.set", json!({"entityId": "nope", "value": "x"})),
        "entity_not_found",
    );
    // "Requires a text component"
    reject(
        &mut k,
        script("text.set", json!({"entityId": "card", "value": "x"})),
        "missing_component",
    );
    // "and a value no larger than 4,096 UTF-8 bytes" (4,097 bytes here).
    let long = format!("{}a", "😀".repeat(1024));
    reject(
        &mut k,
        script("text.set", json!({"entityId": "sign", "value": long})),
        "text_too_long",
    );
}
