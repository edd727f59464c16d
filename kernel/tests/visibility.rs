//! Container visibility (docs/observations.md, Containers): how `game.json`
//! declares it, what loading refuses, and its canonical form — written only
//! when not public, so tables that hide nothing keep their state hash.

mod common;

use common::{hash_by_definition, started};
use digipology_kernel::{state_from_canonical, state_from_game, Visibility};
use serde_json::{json, Value};

fn game(container: Value) -> Value {
    json!({"seats": ["north", "south"],
           "entities": [{"id": "box", "components": {"container": container}},
                        {"id": "card", "components": {}}]})
}

fn container_doc(g: &Value) -> Value {
    let state = state_from_game(g, 1).expect("loads");
    let doc: Value = serde_json::from_str(&state.canonical_json()).expect("canonical");
    doc["entities"]["box"]["components"]["container"].clone()
}

#[test]
fn the_three_visibilities_load_and_only_non_public_ones_are_written() {
    assert_eq!(
        container_doc(&game(json!({"items": ["card"]}))),
        json!({"capacity": null, "items": ["card"]})
    );
    assert_eq!(
        container_doc(&game(json!({"visibility": "public"}))),
        json!({"capacity": null, "items": []})
    );
    assert_eq!(
        container_doc(&game(json!({"visibility": "hidden", "items": ["card"]}))),
        json!({"capacity": null, "items": ["card"], "visibility": "hidden"})
    );
    assert_eq!(
        container_doc(&game(json!({"visibility": "private", "owner": "south"}))),
        json!({"capacity": null, "items": [], "owner": "south", "visibility": "private"})
    );
    let state = state_from_game(&game(json!({"visibility": "private", "owner": "north"})), 1)
        .expect("loads");
    let c = state
        .entity("box")
        .and_then(|e| e.components.container.clone())
        .expect("container");
    assert_eq!(c.visibility, Visibility::Private("north".into()));
}

#[test]
fn a_public_container_keeps_the_hash_it_had_before_visibility_existed() {
    // The same table with and without an explicit "public": one state, one
    // hash — and the document has no visibility key for the hash to cover.
    let plain = state_from_game(&game(json!({"items": ["card"]})), 1).expect("loads");
    let explicit = state_from_game(&game(json!({"items": ["card"], "visibility": "public"})), 1)
        .expect("loads");
    assert_eq!(plain.hash(), explicit.hash());
    assert!(!plain.canonical_json().contains("visibility"));
    // Hiding changes the state, so it changes the hash.
    let hidden = state_from_game(&game(json!({"items": ["card"], "visibility": "hidden"})), 1)
        .expect("loads");
    assert_ne!(plain.hash(), hidden.hash());
    assert_eq!(hidden.hash(), hash_by_definition(&hidden).0);
}

#[test]
fn bad_visibilities_are_refused_with_their_path() {
    let cases = [
        (
            json!({"visibility": "secret"}),
            "entities[\"box\"].components.container.visibility",
            "\"secret\" is not a visibility (public, private or hidden)",
        ),
        (
            json!({"visibility": "private"}),
            "entities[\"box\"].components.container.owner",
            "a private container needs an owner seat",
        ),
        (
            json!({"visibility": "hidden", "owner": "north"}),
            "entities[\"box\"].components.container.owner",
            "only a private container has an owner",
        ),
        (
            json!({"owner": "north"}),
            "entities[\"box\"].components.container.owner",
            "only a private container has an owner",
        ),
        (
            json!({"visibility": "private", "owner": "east"}),
            "entities[\"box\"].components.container.owner",
            "\"east\" is not one of the game's seats",
        ),
        (
            json!({"visibility": 3}),
            "entities[\"box\"].components.container.visibility",
            "",
        ),
    ];
    for (container, path, message) in cases {
        let e = state_from_game(&game(container.clone()), 1)
            .err()
            .unwrap_or_else(|| panic!("{container} loaded"));
        assert_eq!(e.path, path, "{container}");
        assert!(e.message.contains(message), "{container}: {}", e.message);
    }
    // A prefab's owner is checked too.
    let mut g = game(json!({}));
    g["prefabs"] =
        json!({"hand": {"components": {"container": {"visibility": "private", "owner": "west"}}}});
    let e = state_from_game(&g, 1).expect_err("refused");
    assert_eq!(e.path, "prefabs[\"hand\"].components.container.owner");
}

#[test]
fn a_saved_state_with_visibilities_restores_to_the_same_bytes() {
    let g = json!({"seats": ["north"],
                   "entities": [
                       {"id": "hand", "components": {"container": {"visibility": "private", "owner": "north", "items": ["c1"]}}},
                       {"id": "pile", "components": {"container": {"visibility": "hidden", "items": ["c2"]}}},
                       {"id": "c1", "components": {}}, {"id": "c2", "components": {}}]});
    let k = started(&g, 5);
    let state = k.state();
    let doc: Value = serde_json::from_str(&state.canonical_json()).expect("canonical");
    let back = state_from_canonical(state, &doc).expect("restores");
    assert_eq!(back.canonical_json(), state.canonical_json());
    assert_eq!(back.hash(), state.hash());
    // A save whose owner is no seat is refused like a game.json.
    let mut bad = doc.clone();
    bad["entities"]["hand"]["components"]["container"]["owner"] = json!("nobody");
    let e = state_from_canonical(state, &bad).expect_err("refused");
    assert!(e.message.contains("not one of the game's seats"), "{e:?}");
}

/// A card that goes into a private or hidden container has made a trip
/// (its alias changes for seats that cannot see inside); into a public one
/// it has not. The trip is canonical — `[room sequence after the action,
/// place among its trips]`, written only when there is one — and rolls
/// back with its action. Leaving a private container keeps the card known
/// to the owner seat until its next trip.
#[test]
fn going_into_a_hidden_place_is_a_trip() {
    let g = json!({"seats": ["north"],
                   "entities": [
                       {"id": "deck", "components": {"deck": {}, "container": {"items": ["c1", "c2", "c3"]}}},
                       {"id": "hand", "components": {"container": {"visibility": "private", "owner": "north"}}},
                       {"id": "pile", "components": {"container": {"visibility": "hidden"}}},
                       {"id": "table", "components": {"container": {}}},
                       {"id": "c1", "components": {}}, {"id": "c2", "components": {}}, {"id": "c3", "components": {}}]});
    let mut k = started(&g, 1);
    let doc = |k: &digipology_kernel::Kernel| -> Value {
        serde_json::from_str(&k.state().canonical_json()).expect("canonical")
    };
    let mv = |e: &str, from: &str, to: &str| {
        common::script(
            "container.move",
            json!({"entity": e, "from": from, "to": to, "index": 0}),
        )
    };
    common::accept(&mut k, mv("c3", "deck", "table"));
    assert!(
        doc(&k)["entities"]["c3"].get("trip").is_none(),
        "a public container is no trip"
    );
    let seq = k.state().sequence;
    common::accept(&mut k, mv("c3", "table", "hand"));
    assert_eq!(doc(&k)["entities"]["c3"]["trip"], json!([seq + 1, 1]));
    common::accept(&mut k, mv("c3", "hand", "table"));
    assert_eq!(
        doc(&k)["entities"]["c3"]["revealedTo"],
        json!(["north"]),
        "the owner saw it leave the hand"
    );
    common::accept(&mut k, mv("c3", "table", "pile"));
    let d = doc(&k);
    assert_eq!(d["entities"]["c3"]["trip"], json!([seq + 3, 1]));
    assert!(
        d["entities"]["c3"].get("revealedTo").is_none(),
        "a trip forgets"
    );
    assert!(d["entities"]["c2"].get("trip").is_none());
    // Rolled back with a failing handler: no trip.
    let mut failing = common::failing_host();
    let out = k.process_json(&mv("c2", "deck", "pile"), &mut failing);
    assert!(!out.accepted());
    assert!(doc(&k)["entities"]["c2"].get("trip").is_none());
    // And it survives a save.
    let back = state_from_canonical(k.state(), &d).expect("restores");
    assert_eq!(
        back.entity("c3").map(|e| e.secrecy.clone()),
        k.state().entity("c3").map(|e| e.secrecy.clone())
    );
    assert_eq!(back.hash(), k.state().hash());
}
