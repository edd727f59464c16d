//! The state as a viewer may see it (docs/observations.md, The state a
//! viewer sees): each rule, and a canary — a marker in every hidden prop
//! must not appear anywhere in a projection for a viewer who may not see
//! it.

mod common;

use common::{accept, script, started, system};
use digipology_kernel::{Kernel, Viewer};
use serde_json::{json, Value};

const CANARY: &str = "CANARY-7f3a";

/// Two seats with hands, a hidden draw pile, a public discard, a card face
/// down on the table and one face up; every card carries a marker prop.
fn table() -> Kernel {
    table_with(Vec::new())
}

/// [`table`] with `extra` entities besides.
fn table_with(extra: Vec<Value>) -> Kernel {
    let card = |id: &str, face_down: bool| {
        json!({"id": id, "tags": ["card"], "props": {"secret": format!("{CANARY}-{id}")},
               "components": {"flippable": {"flipped": face_down}, "grabbable": {},
                              "transform": {"position": {"x": 1, "y": 0, "z": 2}}}})
    };
    let mut entities = vec![
        json!({"id": "hand_n", "components": {"container": {"visibility": "private", "owner": "north", "items": ["n1", "n2"]}}}),
        json!({"id": "hand_s", "components": {"container": {"visibility": "private", "owner": "south", "items": ["s1"]}}}),
        json!({"id": "pile", "components": {"deck": {}, "container": {"visibility": "hidden", "items": ["p1", "p2", "p3"]}}}),
        json!({"id": "discard", "components": {"container": {"items": ["d1"]}}}),
    ];
    for (id, down) in [
        ("n1", true),
        ("n2", false),
        ("s1", true),
        ("p1", true),
        ("p2", true),
        ("p3", true),
        ("d1", false),
        ("t_down", true),
        ("t_up", false),
    ] {
        entities.push(card(id, down));
    }
    entities.extend(extra);
    let mut k = started(
        &json!({"apiVersion": 3, "seats": ["north", "south"], "entities": entities}),
        3,
    );
    for (p, seat) in [("ann", "north"), ("bob", "south")] {
        accept(
            &mut k,
            system("system.player_joined", json!({"playerId": p})),
        );
        accept(
            &mut k,
            system("system.seat_assign", json!({"playerId": p, "seatId": seat})),
        );
    }
    k
}

fn view(k: &Kernel, viewer: &str) -> Value {
    serde_json::from_str(
        &k.state()
            .project(&Viewer::parse(viewer))
            .to_canonical_json(),
    )
    .expect("projection is JSON")
}

fn ids(doc: &Value) -> Vec<String> {
    doc["entities"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn a_hand_shows_its_cards_to_its_owner_and_a_count_to_everyone_else() {
    let k = table();
    let north = view(&k, "north");
    assert_eq!(
        north["entities"]["hand_n"]["components"]["container"]["items"],
        json!(["n1", "n2"])
    );
    // Face down in one's own hand: still known.
    assert_eq!(
        north["entities"]["n1"]["props"]["secret"],
        json!(format!("{CANARY}-n1"))
    );
    let south_hand = &north["entities"]["hand_s"]["components"]["container"];
    assert_eq!(south_hand.get("items"), None);
    assert_eq!(south_hand["count"], json!(1));
    assert!(!ids(&north).contains(&"s1".to_owned()));
    for viewer in ["south", "spectator"] {
        let v = view(&k, viewer);
        assert!(!ids(&v).iter().any(|i| i == "n1" || i == "n2"), "{viewer}");
        assert_eq!(
            v["entities"]["hand_n"]["components"]["container"]["count"],
            json!(2)
        );
    }
}

#[test]
fn a_hidden_pile_shows_only_how_many_cards_it_holds() {
    let k = table();
    for viewer in ["north", "south", "spectator"] {
        let v = view(&k, viewer);
        let pile = &v["entities"]["pile"]["components"]["container"];
        assert_eq!(pile["count"], json!(3), "{viewer}");
        assert_eq!(pile.get("items"), None, "{viewer}");
        assert!(
            !ids(&v)
                .iter()
                .any(|i| ["p1", "p2", "p3"].contains(&i.as_str())),
            "{viewer}: {:?}",
            ids(&v)
        );
    }
    // The referee sees the order.
    let all = view(&k, "referee");
    assert_eq!(
        all["entities"]["pile"]["components"]["container"]["items"],
        json!(["p1", "p2", "p3"])
    );
}

#[test]
fn a_face_down_card_on_the_table_is_an_alias_with_no_identity() {
    let k = table();
    let v = view(&k, "south");
    assert!(!ids(&v).contains(&"t_down".to_owned()));
    let aliases: Vec<&String> = v["entities"]
        .as_object()
        .map(|m| m.keys().filter(|k| k.starts_with('h')).collect())
        .unwrap_or_default();
    // The face-down table card and nothing else (hand_n/hand_s start with h
    // too, but are known).
    let hidden: Vec<&&String> = aliases.iter().filter(|a| !a.starts_with("hand_")).collect();
    assert_eq!(hidden.len(), 1, "{aliases:?}");
    let card = &v["entities"][hidden[0].as_str()];
    assert_eq!(card.get("props"), None);
    assert_eq!(card.get("tags"), None);
    assert_eq!(card["components"]["flippable"]["flipped"], json!(true));
    assert_eq!(card["components"]["transform"]["position"]["x"], json!(1));
    // Face up: known by everyone.
    assert_eq!(
        v["entities"]["t_up"]["props"]["secret"],
        json!(format!("{CANARY}-t_up"))
    );
}

#[test]
fn an_alias_changes_with_a_trip_through_a_hidden_place_and_with_the_seed() {
    let mut k = table();
    let alias = |k: &Kernel| {
        let e = k.state().entity("t_down").expect("card");
        k.state().alias(e)
    };
    let before = alias(&k);
    assert_eq!(alias(&k), before, "stable while nothing happens");
    accept(
        &mut k,
        script(
            "container.move",
            json!({"entity": "t_down", "from": null, "to": "pile", "index": 0}),
        ),
    );
    accept(
        &mut k,
        script(
            "container.move",
            json!({"entity": "t_down", "from": "pile", "to": null, "index": 0}),
        ),
    );
    let after = alias(&k);
    assert_ne!(after, before, "a trip through the pile gives a new alias");
    let v = view(&k, "north");
    assert!(v["entities"].get(after.as_str()).is_some());
    assert!(v["entities"].get(before.as_str()).is_none());
    // Another seed, another secret: another alias for the same card.
    let other = digipology_kernel::state_from_game(
        &json!({"entities": [{"id": "t_down", "components": {"flippable": {"flipped": true}}}]}),
        4,
    )
    .expect("loads");
    let same_seed = digipology_kernel::state_from_game(
        &json!({"entities": [{"id": "t_down", "components": {"flippable": {"flipped": true}}}]}),
        3,
    )
    .expect("loads");
    let a = |s: &digipology_kernel::State| s.alias(s.entity("t_down").expect("card"));
    assert_ne!(a(&other), a(&same_seed));
    assert_eq!(a(&same_seed), before, "same seed, same trips: same alias");
}

#[test]
fn seats_get_no_rng_storage_timers_or_other_seats_prompts() {
    let mut k = table();
    accept(
        &mut k,
        script(
            "prompt.create",
            json!({"id": "q_bob", "kind": "confirm", "playerId": "bob", "title": "Sure?"}),
        ),
    );
    for viewer in ["north", "south", "spectator"] {
        let v = view(&k, viewer);
        for secret in ["rng", "storage", "timers"] {
            assert!(v.get(secret).is_none(), "{viewer} sees {secret}");
        }
        let prompts = v["prompts"].as_object().map(|m| m.len()).unwrap_or(0);
        assert_eq!(prompts, usize::from(viewer == "south"), "{viewer}");
    }
    assert!(view(&k, "referee").get("rng").is_some());
}

/// Which cards' markers each viewer of [`table`] may see: the ones it
/// knows.
fn visible(viewer: &str) -> Vec<&'static str> {
    match viewer {
        "north" => vec!["n1", "n2", "d1", "t_up"],
        "south" => vec!["s1", "d1", "t_up"],
        _ => vec!["d1", "t_up"],
    }
}

#[test]
fn no_canary_reaches_a_viewer_who_may_not_see_it() {
    let k = table();
    for viewer in ["north", "south", "spectator"] {
        let text = k
            .state()
            .project(&Viewer::parse(viewer))
            .to_canonical_json();
        for card in ["n1", "n2", "s1", "p1", "p2", "p3", "d1", "t_down", "t_up"] {
            let marker = format!("{CANARY}-{card}\"");
            let seen = text.contains(&marker);
            assert_eq!(
                seen,
                visible(viewer).contains(&card),
                "{viewer} and {card}: {text}"
            );
        }
        // No real id of an unlisted or aliased card either.
        for card in ["p1", "p2", "p3", "t_down"] {
            assert!(
                !text.contains(&format!("\"{card}\"")),
                "{viewer} sees {card}"
            );
        }
    }
}

/// Each event of the last action as `viewer` gets it (docs/observations.md,
/// The events a viewer sees).
fn events_for(k: &Kernel, out: &digipology_kernel::Outcome, viewer: &str) -> Vec<Value> {
    out.events
        .iter()
        .filter_map(|e| {
            let mut line = String::new();
            k.state()
                .write_event_for(e, &Viewer::parse(viewer), &mut line)
                .then(|| serde_json::from_str(&line).expect("an event line is JSON"))
        })
        .collect()
}

fn run(k: &mut Kernel, action: Value) -> digipology_kernel::Outcome {
    let out = k.process_json(&action, &mut digipology_kernel::NoScripts);
    assert!(out.accepted(), "{:?}", out.rejection());
    out
}

#[test]
fn a_deal_from_the_hidden_pile_names_each_card_only_to_the_seat_that_gets_it() {
    let mut k = table();
    let out = run(
        &mut k,
        script(
            "deck.deal",
            json!({"deckId": "pile", "targets": ["hand_n", "hand_s"], "cardsEach": 1}),
        ),
    );
    let dealt = |viewer: &str| {
        events_for(&k, &out, viewer)
            .into_iter()
            .find(|e| e["type"] == "deck.dealt")
            .expect("dealt")["data"]
            .clone()
    };
    let referee = dealt("referee");
    let cards = referee["entityIds"].as_array().expect("ids").clone();
    assert_eq!(cards.len(), 2);
    // The referee's order is the deal order: north, then south.
    assert_eq!(dealt("north")["entityIds"], json!([cards[0], null]));
    assert_eq!(dealt("south")["entityIds"], json!([null, cards[1]]));
    assert_eq!(dealt("spectator")["entityIds"], json!([null, null]));
    assert_eq!(
        dealt("spectator")["cardsEach"],
        json!(1),
        "how many is public"
    );
    assert_eq!(dealt("spectator")["targets"], json!(["hand_n", "hand_s"]));
}

#[test]
fn a_card_played_face_down_from_a_hand_is_an_alias_to_others_and_known_to_its_owner() {
    let mut k = table();
    let out = run(
        &mut k,
        script(
            "container.move",
            json!({"entity": "n1", "from": "hand_n", "to": null, "index": 0}),
        ),
    );
    let moved = |viewer: &str| events_for(&k, &out, viewer)[0]["data"].clone();
    assert_eq!(moved("north")["entityId"], json!("n1"), "the owner saw it");
    let alias = k.state().alias(k.state().entity("n1").expect("n1"));
    assert_eq!(moved("south")["entityId"], json!(alias));
    assert_eq!(moved("spectator")["entityId"], json!(alias));
    assert_eq!(moved("north")["fromIndex"], json!(0), "the owner saw where");
    for viewer in ["south", "spectator"] {
        assert_eq!(
            moved(viewer)["fromIndex"],
            Value::Null,
            "{viewer}: where in the hand it lay is the owner's"
        );
    }
    assert!(view(&k, "north")["entities"].get("n1").is_some());
    assert!(view(&k, "south")["entities"].get(alias.as_str()).is_some());
}

/// `(fromIndex, index)` of the `container.moved` among `out`'s events as
/// `viewer` sees it.
fn positions(k: &Kernel, out: &digipology_kernel::Outcome, viewer: &str) -> (Value, Value) {
    let moved = events_for(k, out, viewer)
        .into_iter()
        .find(|e| e["type"] == "container.moved")
        .expect("moved");
    (
        moved["data"]["fromIndex"].clone(),
        moved["data"]["index"].clone(),
    )
}

/// docs/observations.md, Positions: an index inside a container shows to a
/// viewer who sees into the container — its owner for a hand, nobody
/// but the referee for a hidden pile, everyone for a public one — and is
/// `null` for the rest, whatever they see of the card that moved.
#[test]
fn a_position_inside_a_container_shows_only_to_viewers_who_see_into_it() {
    let mut k = table();
    // From north's hand to the public discard (below d1).
    let out = run(
        &mut k,
        script(
            "container.move",
            json!({"entity": "n2", "from": "hand_n", "to": "discard", "index": 0}),
        ),
    );
    assert_eq!(positions(&k, &out, "north"), (json!(1), json!(0)));
    assert_eq!(positions(&k, &out, "referee"), (json!(1), json!(0)));
    for viewer in ["south", "spectator"] {
        assert_eq!(
            positions(&k, &out, viewer),
            (Value::Null, json!(0)),
            "{viewer}: the card is face up (known), its place in the hand is not"
        );
    }
    // From the public discard into south's hand.
    let out = run(
        &mut k,
        script(
            "container.move",
            json!({"entity": "d1", "from": "discard", "to": "hand_s", "index": 0}),
        ),
    );
    assert_eq!(positions(&k, &out, "south"), (json!(1), json!(0)));
    for viewer in ["north", "spectator"] {
        assert_eq!(
            positions(&k, &out, viewer),
            (json!(1), Value::Null),
            "{viewer}"
        );
    }
    // From south's hand into the hidden pile: only the source, to south.
    let out = run(
        &mut k,
        script(
            "container.move",
            json!({"entity": "s1", "from": "hand_s", "to": "pile", "index": 1}),
        ),
    );
    assert_eq!(positions(&k, &out, "south"), (json!(1), Value::Null));
    assert_eq!(positions(&k, &out, "referee"), (json!(1), json!(1)));
    for viewer in ["north", "spectator"] {
        assert_eq!(
            positions(&k, &out, viewer),
            (Value::Null, Value::Null),
            "{viewer}"
        );
    }
    // A card revealed to everyone leaves the hidden pile: which card is
    // public, where it lay in the pile is nobody's.
    run(
        &mut k,
        script("entity.reveal", json!({"entityId": "p2", "to": "all"})),
    );
    let out = run(
        &mut k,
        script(
            "container.move",
            json!({"entity": "p2", "from": "pile", "to": null, "index": 0}),
        ),
    );
    for viewer in ["north", "south", "spectator"] {
        let moved = &events_for(&k, &out, viewer)[0]["data"];
        assert_eq!(moved["entityId"], json!("p2"), "{viewer}");
        assert_eq!(moved["fromIndex"], Value::Null, "{viewer}");
        assert_eq!(moved["index"], json!(0), "{viewer}: the world is public");
    }
    // A drop out of a hand: `container.removed`'s index is the owner's.
    let out = run(
        &mut k,
        script(
            "entity.move",
            json!({"entityId": "n1", "transform": {"position": {"x": 0, "y": 0, "z": 0},
                   "rotation": {"x": 0, "y": 0, "z": 0, "w": 1}, "scale": {"x": 1, "y": 1, "z": 1}}}),
        ),
    );
    let removed = |viewer: &str| {
        events_for(&k, &out, viewer)
            .into_iter()
            .find(|e| e["type"] == "container.removed")
            .expect("removed")["data"]
            .clone()
    };
    assert_eq!(removed("north")["index"], json!(0));
    assert_eq!(removed("south")["index"], Value::Null);
    assert_eq!(removed("south")["containerId"], json!("hand_n"));
}

/// A position is judged as the event happened: a hand made public later
/// does not show where a card lay in it before.
#[test]
fn a_position_is_judged_as_it_happened() {
    let mut k = table();
    let out = run(
        &mut k,
        script(
            "container.move",
            json!({"entity": "n2", "from": "hand_n", "to": "discard", "index": 1}),
        ),
    );
    let mut kept = out.events.clone();
    for e in &mut kept {
        k.state().pin_sight(e);
    }
    run(
        &mut k,
        script(
            "container.set_visibility",
            json!({"containerId": "hand_n", "visibility": "public"}),
        ),
    );
    assert!(k.state().sees_into("hand_n", &Viewer::parse("south")));
    let mut line = String::new();
    assert!(k
        .state()
        .write_event_for(&kept[0], &Viewer::parse("south"), &mut line));
    let e: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(e["data"]["fromIndex"], Value::Null, "{line}");
    assert_eq!(e["data"]["index"], json!(1), "{line}");
}

/// A container revealed to a seat inside another seat's hand shows that
/// seat what it is, not what it holds nor where.
#[test]
fn a_box_revealed_inside_a_hand_is_closed_to_the_seat_it_is_shown_to() {
    let mut k = table_with(vec![
        json!({"id": "box", "components": {"container": {"items": ["b1"]}}}),
        json!({"id": "b1", "components": {"grabbable": {}}}),
    ]);
    run(
        &mut k,
        script(
            "container.move",
            json!({"entity": "box", "from": null, "to": "hand_n", "index": 0}),
        ),
    );
    run(
        &mut k,
        script("entity.reveal", json!({"entityId": "box", "to": ["south"]})),
    );
    let south = view(&k, "south");
    let inside = &south["entities"]["box"]["components"]["container"];
    assert_eq!(inside.get("items"), None, "{south}");
    assert_eq!(inside["count"], json!(1));
    let north = view(&k, "north");
    assert_eq!(
        north["entities"]["box"]["components"]["container"]["items"],
        json!(["b1"])
    );
}

#[test]
fn a_reveal_shows_a_card_to_its_seats_until_its_next_trip() {
    let mut k = table();
    run(
        &mut k,
        script("entity.reveal", json!({"entityId": "s1", "to": ["north"]})),
    );
    let north = view(&k, "north");
    assert_eq!(
        north["entities"]["hand_s"]["components"]["container"]["shown"],
        json!([{"index": null, "id": "s1"}]),
        "which card, never where it lies"
    );
    assert!(north["entities"]["s1"]["props"]["secret"].is_string());
    assert!(view(&k, "spectator")["entities"].get("s1").is_none());
    // Back through a hidden place: forgotten.
    run(
        &mut k,
        script(
            "container.move",
            json!({"entity": "s1", "from": "hand_s", "to": "pile", "index": 0}),
        ),
    );
    assert!(view(&k, "north")["entities"].get("s1").is_none());
    // To everyone: the top of the pile, face up for all.
    run(
        &mut k,
        script("entity.reveal", json!({"entityId": "p3", "to": "all"})),
    );
    for viewer in ["north", "south", "spectator"] {
        assert!(view(&k, viewer)["entities"].get("p3").is_some(), "{viewer}");
    }
    // Bad requests change nothing.
    for bad in [
        json!({"entityId": "p1", "to": ["west"]}),
        json!({"entityId": "p1", "to": []}),
        json!({"entityId": "p1", "to": "some"}),
        json!({"entityId": "p1"}),
    ] {
        let before = k.state().hash();
        let out = k.process_json(
            &script("entity.reveal", bad.clone()),
            &mut digipology_kernel::NoScripts,
        );
        assert!(!out.accepted(), "{bad}");
        assert_eq!(k.state().hash(), before);
    }
}

#[test]
fn hiding_a_public_container_is_a_trip_for_its_items() {
    let mut k = table();
    let before = view(&k, "spectator");
    assert!(before["entities"].get("d1").is_some());
    let out = run(
        &mut k,
        script(
            "container.set_visibility",
            json!({"containerId": "discard", "visibility": "private", "owner": "south"}),
        ),
    );
    assert_eq!(
        events_for(&k, &out, "spectator")[0]["data"],
        json!({"containerId": "discard", "visibility": "private", "owner": "south"})
    );
    assert!(view(&k, "spectator")["entities"].get("d1").is_none());
    assert!(view(&k, "south")["entities"].get("d1").is_some());
    let doc: Value = serde_json::from_str(&k.state().canonical_json()).expect("json");
    assert!(doc["entities"]["d1"]["trip"].is_array(), "{doc}");
}

#[test]
fn seats_get_no_timer_events_no_other_seats_prompts_and_no_script_messages() {
    let mut k = table();
    let out = run(
        &mut k,
        script(
            "prompt.create",
            json!({"id": "q_bob", "kind": "confirm", "playerId": "bob", "title": "Sure?"}),
        ),
    );
    assert_eq!(events_for(&k, &out, "south").len(), 1);
    assert!(events_for(&k, &out, "north").is_empty());
    assert!(events_for(&k, &out, "spectator").is_empty());
    let out = run(
        &mut k,
        script(
            "timer.register",
            json!({"timerId": "t", "delay": 10, "callback": "cb", "scriptId": "main", "bindingId": "global"}),
        ),
    );
    assert_eq!(events_for(&k, &out, "referee").len(), 1);
    assert!(events_for(&k, &out, "north").is_empty());
    // A rejection naming a hidden card: its id is scrubbed for seats.
    let out = k.process_json(
        &script(
            "container.move",
            json!({"entity": "p1", "from": "hand_n", "to": null, "index": 0}),
        ),
        &mut digipology_kernel::NoScripts,
    );
    let message = |viewer: &str| {
        events_for(&k, &out, viewer)[0]["data"]["message"]
            .as_str()
            .expect("message")
            .to_owned()
    };
    assert!(message("referee").contains("p1"), "{}", message("referee"));
    assert!(!message("north").contains("p1"), "{}", message("north"));
    assert!(message("north").contains('?'), "{}", message("north"));
}

#[test]
fn a_destroyed_hidden_card_stays_unnamed_in_its_events() {
    let mut k = table();
    let out = run(&mut k, script("entity.destroy", json!({"entityId": "p2"})));
    for viewer in ["north", "spectator"] {
        for e in events_for(&k, &out, viewer) {
            let text = e.to_string();
            assert!(!text.contains("\"p2\""), "{viewer}: {text}");
        }
    }
    let referee: Vec<String> = events_for(&k, &out, "referee")
        .iter()
        .map(Value::to_string)
        .collect();
    assert!(referee.iter().any(|t| t.contains("\"p2\"")));
}

fn by(player: &str, ty: &str, payload: Value) -> Value {
    json!({"type": ty, "source": {"kind": "player", "playerId": player}, "payload": payload})
}

/// docs/observations.md, Acting on what a seat sees.
#[test]
fn a_seat_acts_on_an_alias_it_was_shown_and_cannot_probe_hidden_places() {
    let mut k = table();
    let alias = |k: &Kernel, id: &str| k.state().alias(k.state().entity(id).expect("card"));
    // A face-down card on the table, grabbed by the alias north sees.
    let a = alias(&k, "t_down");
    let out = run(&mut k, by("ann", "entity.grab", json!({"entityId": a})));
    assert_eq!(
        events_for(&k, &out, "referee")[0]["data"]["entityId"],
        json!("t_down")
    );
    assert_eq!(
        events_for(&k, &out, "south")[0]["data"]["entityId"],
        json!(a)
    );
    // The alias a card in the hidden pile would have names nothing for a
    // seat, and neither does its id: the same answer as a made-up id.
    let hidden = alias(&k, "p1");
    let refused = |k: &mut Kernel, name: &str| {
        let before = k.state().hash();
        let out = k.process_json(
            &by("bob", "entity.grab", json!({"entityId": name})),
            &mut digipology_kernel::NoScripts,
        );
        assert_eq!(k.state().hash(), before);
        let r = out.rejection().expect("refused").clone();
        (r.code, r.message.replace(name, "NAME"))
    };
    let made_up = refused(&mut k, "no_such_card");
    assert_eq!(refused(&mut k, &hidden), made_up);
    assert_eq!(refused(&mut k, "p1"), made_up, "an id in the hidden pile");
    assert_eq!(refused(&mut k, "n2"), made_up, "an id in north's hand");
    // Nor by the order of the checks: a bad key is reported first for a
    // hidden card exactly as for a made-up one.
    let probe = |k: &mut Kernel, name: &str| {
        let out = k.process_json(
            &by("bob", "entity.grab", json!({"entityId": name, "x": 1})),
            &mut digipology_kernel::NoScripts,
        );
        out.rejection().map(|r| r.code)
    };
    assert_eq!(probe(&mut k, "p1"), probe(&mut k, "no_such_card"));
    // And the rejection reads the same to the seat that sent it.
    let seen_by_bob = |k: &mut Kernel, name: &str| {
        let out = k.process_json(
            &by("bob", "entity.grab", json!({"entityId": name})),
            &mut digipology_kernel::NoScripts,
        );
        events_for(k, &out, "south")[0]["data"].clone()
    };
    assert_eq!(
        seen_by_bob(&mut k, "p1"),
        seen_by_bob(&mut k, "no_such_card")
    );
    assert_eq!(
        probe(&mut k, "p1"),
        Some(digipology_kernel::RejectCode::UnknownKey)
    );
    // North's own hand card, by id: fine for north.
    run(&mut k, by("ann", "entity.flip", json!({"entityId": "n2"})));
}

/// A die's face is what it is: rolled inside a private cup, its value and
/// face index reach only the cup's owner (docs/observations.md, The
/// events a viewer sees).
#[test]
fn a_die_rolled_in_a_private_cup_shows_its_face_only_to_the_owner() {
    let mut k = started(
        &json!({"seats": ["north", "south"], "entities": [
            {"id": "cup", "components": {"container": {"visibility": "private", "owner": "north", "items": ["d6"]}}},
            {"id": "d6", "components": {"die": {}}}]}),
        5,
    );
    let out = run(&mut k, script("die.roll", json!({"entityId": "d6"})));
    let rolled = |viewer: &str| events_for(&k, &out, viewer)[0]["data"].clone();
    assert!(rolled("north")["index"].is_number());
    assert!(rolled("north")["value"].is_number());
    for viewer in ["south", "spectator"] {
        assert_eq!(
            rolled(viewer),
            json!({"entityId": null, "index": null, "value": null}),
            "{viewer}"
        );
    }
}

/// docs/observations.md, Aliases: a trip takes everything that could
/// point back at the card — what it holds trips too, and it forgets where
/// it lay; a shuffle of a public deck is a trip for its face-down cards.
#[test]
fn a_trip_leaves_nothing_to_follow_a_card_by() {
    let card = |id: &str, x: f64| {
        json!({"id": id, "components": {"flippable": {"flipped": true},
               "transform": {"position": {"x": x, "y": 0, "z": 2}}}})
    };
    let mut k = started(
        &json!({"seats": ["north"], "entities": [
            {"id": "tray", "components": {"container": {"items": ["t1", "t2"]}}},
            {"id": "box", "components": {"container": {"visibility": "hidden"},
                                           "transform": {"position": {"x": 9, "y": 0, "z": 9}}}},
            {"id": "deck", "components": {"deck": {}, "container": {"items": ["d1", "d2", "d3", "d4"]}}},
            card("t1", 1.0), card("t2", 2.0), card("loose", 4.0),
            card("d1", 0.0), card("d2", 0.0), card("d3", 0.0), card("d4", 0.0)]}),
        9,
    );
    let alias = |k: &Kernel, id: &str| k.state().alias(k.state().entity(id).expect("card"));
    let x = |k: &Kernel, id: &str| {
        k.state()
            .entity(id)
            .and_then(|e| e.components.transform)
            .map(|t| t.position.x)
    };
    let mv = |e: &str, from: Value, to: Value| {
        script(
            "container.move",
            json!({"entity": e, "from": from, "to": to, "index": 0}),
        )
    };
    // The tray goes into the box and out again: its cards made the trip.
    let before = [alias(&k, "t1"), alias(&k, "t2")];
    run(&mut k, mv("tray", Value::Null, json!("box")));
    run(&mut k, mv("tray", json!("box"), Value::Null));
    for (i, id) in ["t1", "t2"].iter().enumerate() {
        assert_ne!(
            alias(&k, id),
            before[i],
            "{id} kept its alias through the box"
        );
    }
    // A loose card goes in and comes out where the box is, not where it lay.
    assert_eq!(x(&k, "loose"), Some(4.0));
    run(&mut k, mv("loose", Value::Null, json!("box")));
    run(&mut k, mv("loose", json!("box"), Value::Null));
    assert_eq!(x(&k, "loose"), Some(9.0));
    // Shuffling the public deck of face-down cards: all new aliases.
    let old: Vec<String> = ["d1", "d2", "d3", "d4"]
        .iter()
        .map(|d| alias(&k, d))
        .collect();
    run(&mut k, script("deck.shuffle", json!({"deckId": "deck"})));
    for d in ["d1", "d2", "d3", "d4"] {
        assert!(
            !old.contains(&alias(&k, d)),
            "{d} can be followed through the shuffle"
        );
    }
}

/// docs/observations.md, Aliases and Reveals: a card put into a public
/// tray that lies in a hidden box has gone into a hidden place; a shuffle
/// of a hidden pile ends every reveal in it; the game file's hidden cards,
/// at any depth, start with a trip and lie where their box is.
#[test]
fn hidden_places_hide_at_any_depth_and_a_shuffle_ends_reveals() {
    let card = |id: &str, x: f64| {
        json!({"id": id, "components": {"flippable": {"flipped": true},
               "transform": {"position": {"x": x, "y": 0, "z": 0}}}})
    };
    let mut k = started(
        &json!({"seats": ["north"], "entities": [
            {"id": "box", "components": {"container": {"visibility": "hidden", "items": ["tray"]},
                                          "transform": {"position": {"x": 7, "y": 0, "z": 0}}}},
            {"id": "tray", "components": {"container": {"items": ["inner"]}}},
            {"id": "pile", "components": {"deck": {}, "container": {"visibility": "hidden", "items": ["p1", "p2", "p3"]}}},
            card("inner", 5.0), card("loose", 3.0),
            card("p1", 0.0), card("p2", 0.0), card("p3", 0.0)]}),
        4,
    );
    let doc = |k: &Kernel| -> Value {
        serde_json::from_str(&k.state().canonical_json()).expect("canonical")
    };
    // Loaded two levels down: a trip, and the box's place.
    let d = doc(&k);
    assert!(
        d["entities"]["inner"]["trip"].is_array(),
        "{}",
        d["entities"]["inner"]
    );
    assert_eq!(
        d["entities"]["inner"]["components"]["transform"]["position"]["x"],
        json!(7)
    );
    // Into the tray inside the box: a trip.
    let before = k.state().alias(k.state().entity("loose").expect("loose"));
    run(
        &mut k,
        script(
            "container.move",
            json!({"entity": "loose", "from": null, "to": "tray", "index": 0}),
        ),
    );
    assert!(doc(&k)["entities"]["loose"]["trip"].is_array());
    assert_ne!(
        k.state().alias(k.state().entity("loose").expect("loose")),
        before
    );
    // A card of the pile shown to everyone, then the pile is shuffled.
    run(
        &mut k,
        script("entity.reveal", json!({"entityId": "p3", "to": "all"})),
    );
    assert!(view(&k, "spectator")["entities"].get("p3").is_some());
    run(&mut k, script("deck.shuffle", json!({"deckId": "pile"})));
    assert!(
        view(&k, "spectator")["entities"].get("p3").is_none(),
        "still followed"
    );
    assert!(doc(&k)["entities"]["p3"].get("revealedTo").is_none());
}

/// docs/observations.md, The events a viewer sees: a guard's reason is the
/// game's own text — the referee reads it, seats get null.
/// docs/observations.md, `action.rejected`: a quoted name stays in a
/// seat's copy of a rejection when it names a prompt addressed to the
/// player in that seat, answered or not; to every other seat it is `?`.
#[test]
fn a_seats_own_prompt_keeps_its_id_in_a_rejection() {
    let mut k = table();
    run(
        &mut k,
        script(
            "prompt.create",
            json!({"id": "q_bob", "kind": "confirm", "playerId": "bob", "title": "Sure?"}),
        ),
    );
    let answer = by(
        "bob",
        "prompt.respond",
        json!({"promptId": "q_bob", "response": true}),
    );
    run(&mut k, answer.clone());
    let out = k.process_json(&answer, &mut digipology_kernel::NoScripts);
    let message = |viewer: &str| events_for(&k, &out, viewer)[0]["data"]["message"].clone();
    assert_eq!(
        message("referee"),
        json!("prompt \"q_bob\" is already resolved")
    );
    assert_eq!(message("south"), message("referee"), "bob sits in south");
    for viewer in ["north", "spectator"] {
        assert_eq!(
            message(viewer),
            json!("prompt \"?\" is already resolved"),
            "{viewer}"
        );
    }
}

/// The event's copies; the server's answer to the attempt carries the
/// reason to the seat that tried (tests/server.rs).
#[test]
fn a_guards_reason_reaches_the_referee_only() {
    let mut k = table();
    let mut host =
        digipology_kernel::ClosureHost::new().with_guard(|_, _| digipology_kernel::Verdict::Deny {
            reason: Some("not the CANARY-7f3a-p1 yet".into()),
        });
    let out = k.process_json(
        &by("ann", "entity.grab", json!({"entityId": "t_up"})),
        &mut host,
    );
    let message = |viewer: &str| events_for(&k, &out, viewer)[0]["data"]["message"].clone();
    assert_eq!(message("referee"), json!("not the CANARY-7f3a-p1 yet"));
    for viewer in ["north", "south", "spectator"] {
        assert_eq!(message(viewer), Value::Null, "{viewer}");
    }
}

/// docs/observations.md: an alias is `h` and the first 8 bytes (hex) of
/// blake3 keyed with the room's secret over 1, the trip's `at` (u64 LE)
/// and `n` (u32 LE) — or over 0 and the id when there is no trip.
#[test]
fn an_alias_is_the_documented_keyed_hash() {
    let mut k = table();
    run(
        &mut k,
        script(
            "container.move",
            json!({"entity": "p1", "from": "pile", "to": null, "index": 0}),
        ),
    );
    let state = k.state();
    let hex = |bytes: &[u8]| -> String { bytes.iter().map(|b| format!("{b:02x}")).collect() };
    let expect = |input: &[u8]| {
        format!(
            "h{}",
            hex(&blake3::keyed_hash(&state.alias_key, input).as_bytes()[..8])
        )
    };
    let t_down = state.entity("t_down").expect("card");
    assert!(t_down.secrecy.trip.is_none());
    let mut by_id = vec![0u8];
    by_id.extend_from_slice(b"t_down");
    assert_eq!(state.alias(t_down), expect(&by_id));
    let p1 = state.entity("p1").expect("card");
    let trip = p1.secrecy.trip.expect("loaded into the pile: a trip");
    let mut by_trip = vec![1u8];
    by_trip.extend_from_slice(&trip.at.to_le_bytes());
    by_trip.extend_from_slice(&trip.n.to_le_bytes());
    assert_eq!(state.alias(p1), expect(&by_trip));
}

// docs/observations.md, Text a game writes: every entity id in text a
// game writes for a viewer names the entity as that viewer sees it — its
// id, its alias, or `?` — exactly like the kernel's own messages; the
// referee reads the text as written.

fn alias_of(k: &Kernel, id: &str) -> String {
    k.state().alias(k.state().entity(id).expect("entity"))
}

fn read(k: &Kernel, text: &str, viewer: &str) -> String {
    k.state()
        .scrub_text(text, &Viewer::parse(viewer))
        .into_owned()
}

/// The seat grabs the face-down card by its alias and the game's guard
/// answers `"cannot take " .. entity.id`: the seat reads the alias, never
/// the id; a card in the hidden pile is `?`; a face-up card keeps its id.
#[test]
fn a_guards_reason_names_a_hidden_card_only_as_the_seat_sees_it() {
    let mut k = table();
    let mut host = digipology_kernel::ClosureHost::new().with_guard(|_, request| {
        digipology_kernel::Verdict::Deny {
            reason: Some(format!(
                "cannot take {}; p1 is next, then t_up",
                request.entity_id
            )),
        }
    });
    let down = alias_of(&k, "t_down");
    let out = k.process_json(
        &by("ann", "entity.grab", json!({"entityId": down})),
        &mut host,
    );
    let reason = out.rejection().expect("refused").message.clone();
    assert_eq!(reason, "cannot take t_down; p1 is next, then t_up");
    assert_eq!(read(&k, &reason, "referee"), reason);
    for viewer in ["north", "south", "spectator"] {
        assert_eq!(
            read(&k, &reason, viewer),
            format!("cannot take {down}; ? is next, then t_up"),
            "{viewer}"
        );
    }
    // In the seat's own hand, face down: its id, to its owner only.
    assert_eq!(read(&k, "n1, s1", "north"), "n1, ?");
    assert_eq!(read(&k, "n1, s1", "south"), "?, s1");
}

/// docs/observations.md, Text a game writes: an id is found as whole
/// units — a word (letters, digits, `_`) or one other character — the
/// leftmost first, then the longest: not inside a longer id or word, but
/// next to quotes and punctuation; an id of several units as a whole.
#[test]
fn an_id_in_text_is_found_as_whole_units_not_inside_a_longer_id() {
    let card =
        |id: &str, down: bool| json!({"id": id, "components": {"flippable": {"flipped": down}}});
    let k = started(
        &json!({"seats": ["north"], "entities": [
            {"id": "pile", "components": {"container": {"visibility": "hidden",
                "items": ["card_1", "ace of spades", "c-1"]}}},
            card("card_1", true), card("card_10", false), card("ace of spades", true),
            card("ace", false), card("c-1", true), card("c-10", false)]}),
        2,
    );
    let cases = [
        ("take card_1.", "take ?."),
        ("take card_10, not card_1!", "take card_10, not ?!"),
        ("\"card_1\"", "\"?\""),
        ("play:card_1", "play:?"),
        ("(card_1)[card_1]{card_1}", "(?)[?]{?}"),
        (
            "xcard_1 card_1x card_100 card_1_",
            "xcard_1 card_1x card_100 card_1_",
        ),
        ("the ace of spades, an ace", "the ?, an ace"),
        ("c-1 c-10 c-1.", "? c-10 ?."),
        ("", ""),
    ];
    for (text, seen) in cases {
        assert_eq!(read(&k, text, "north"), seen, "{text}");
        assert_eq!(read(&k, text, "referee"), text, "{text}");
    }
}

/// A prompt's question, choices and default name hidden cards as the
/// seat sees them — in the projection and in `prompt.created` — and the
/// seat answers with what it was shown: the alias stands for the card.
#[test]
fn a_prompt_naming_hidden_cards_reads_and_is_answered_as_the_seat_sees_them() {
    let mut k = table();
    let down = alias_of(&k, "t_down");
    let out = run(
        &mut k,
        script(
            "prompt.create",
            json!({"id": "q", "kind": "choice", "playerId": "bob",
                   "title": "Take t_down, p1 or t_up?",
                   "choices": ["t_down", "p1", "t_up", "take:t_down"], "default": "t_down"}),
        ),
    );
    let seen_title = format!("Take {down}, ? or t_up?");
    let seen_choices = json!([down, "?", "t_up", format!("take:{down}")]);
    let created = &events_for(&k, &out, "south")[0]["data"];
    assert_eq!(created["title"], json!(seen_title));
    assert_eq!(created["choices"], seen_choices);
    assert_eq!(created["default"], json!(down));
    let prompt = &view(&k, "south")["prompts"]["q"];
    assert_eq!(prompt["title"], json!(seen_title));
    assert_eq!(prompt["choices"], seen_choices);
    assert_eq!(prompt["default"], json!(down));
    let referee = &view(&k, "referee")["prompts"]["q"];
    assert_eq!(referee["title"], json!("Take t_down, p1 or t_up?"));
    // Bob answers with the alias he was shown: the game gets its choice.
    let out = run(
        &mut k,
        by(
            "bob",
            "prompt.respond",
            json!({"promptId": "q", "response": format!("take:{down}")}),
        ),
    );
    assert_eq!(
        events_for(&k, &out, "referee")[0]["data"]["response"],
        json!("take:t_down")
    );
    assert_eq!(
        events_for(&k, &out, "south")[0]["data"]["response"],
        json!(format!("take:{down}"))
    );
}

/// What the game wrote on an entity a viewer sees in full — its props
/// (values, keys, sentences), tags and text — names hidden cards as the
/// viewer sees them; two keys that read the same keep the entry whose
/// value is first in canonical order (not the one of the smaller real id).
#[test]
fn props_tags_and_texts_name_hidden_cards_as_the_viewer_sees_them() {
    let k = started(
        &json!({"seats": ["north"], "entities": [
            {"id": "pile", "components": {"container": {"visibility": "hidden", "items": ["p1", "p2"]}}},
            {"id": "p1"}, {"id": "p2"}, {"id": "up"},
            {"id": "down", "components": {"flippable": {"flipped": true}}},
            {"id": "sign", "tags": ["about:p1"], "components": {"text": {"value": "bottom: p2; up is up"}},
             "props": {"pair": "down", "list": ["p1", "up"], "sentence": "p1 then p2",
                       "keyed": {"p1": "b", "p2": "a", "up": "c"}}}]}),
        2,
    );
    let down = alias_of(&k, "down");
    for viewer in ["north", "spectator"] {
        let sign = &view(&k, viewer)["entities"]["sign"];
        assert_eq!(sign["tags"], json!(["about:?"]), "{viewer}");
        assert_eq!(
            sign["components"]["text"],
            json!({"value": "bottom: ?; up is up"}),
            "{viewer}"
        );
        assert_eq!(
            sign["props"],
            json!({"pair": down, "list": ["?", "up"], "sentence": "? then ?",
                   "keyed": {"?": "a", "up": "c"}}),
            "{viewer}"
        );
    }
    let sign = &view(&k, "referee")["entities"]["sign"];
    assert_eq!(
        sign["props"]["keyed"],
        json!({"p1": "b", "p2": "a", "up": "c"})
    );
}

/// A value of the game's (a view, an answer) is read the same way, and
/// `State::scrub_json` reads JSON as `State::scrub_value` reads values.
#[test]
fn a_games_answer_names_hidden_cards_as_the_viewer_sees_them() {
    let k = table();
    let down = alias_of(&k, "t_down");
    let answer = json!({"top": "p1", "cards": ["t_down", "t_up", "n1"],
                        "p2": "hidden key", "say": "t_down is face down, n1 is north's"});
    let mut value = digipology_kernel::Value::from_json(&answer).expect("canonical");
    k.state().scrub_value(&mut value, &Viewer::parse("north"));
    let expected = json!({"top": "?", "cards": [down, "t_up", "n1"], "?": "hidden key",
                          "say": format!("{down} is face down, n1 is north's")});
    assert_eq!(value.to_json(), expected);
    let mut as_json = answer.clone();
    k.state().scrub_json(&mut as_json, &Viewer::parse("north"));
    assert_eq!(as_json, expected);
    let mut south = answer.clone();
    k.state().scrub_json(&mut south, &Viewer::parse("south"));
    assert_eq!(south["cards"], json!([down, "t_up", "?"]));
    let mut referee = answer.clone();
    k.state().scrub_json(&mut referee, &Viewer::Referee);
    assert_eq!(referee, answer);
}

/// docs/observations.md, The events a viewer sees: the text of an event
/// kept past its action is judged as it happened — a prompt that named a
/// card in the pile still reads `?` after the card is turned up for all.
#[test]
fn an_events_text_is_judged_as_it_happened() {
    let mut k = table();
    let out = run(
        &mut k,
        script(
            "prompt.create",
            json!({"id": "q", "kind": "confirm", "playerId": "bob", "title": "p1 is on top"}),
        ),
    );
    let mut kept = out.events.clone();
    for e in &mut kept {
        k.state().pin_sight(e);
    }
    run(
        &mut k,
        script(
            "container.move",
            json!({"entity": "p1", "from": "pile", "to": "discard", "index": 0}),
        ),
    );
    run(&mut k, script("entity.flip", json!({"entityId": "p1"})));
    assert_eq!(read(&k, "p1", "south"), "p1", "turned up for all now");
    let mut line = String::new();
    assert!(k
        .state()
        .write_event_for(&kept[0], &Viewer::parse("south"), &mut line));
    let e: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(e["data"]["title"], json!("? is on top"), "{line}");
}

/// The canary for the game's text: a game that names every card in its
/// prompts, on a sign and in a prop shows each viewer no real id of a
/// card it does not fully see, over the state and the events.
#[test]
fn no_hidden_id_reaches_a_viewer_through_the_games_text() {
    let all = ["n1", "n2", "s1", "p1", "p2", "p3", "d1", "t_down", "t_up"];
    let sentence = all.join(" ");
    let mut k = table_with(vec![json!({"id": "sign",
        "props": {"all": format!("of {sentence} "), "list": all},
        "components": {"text": {"value": format!("of {sentence} ")}}})]);
    let mut outs = vec![run(
        &mut k,
        script(
            "text.set",
            json!({"entityId": "sign", "value": format!("of {sentence} !")}),
        ),
    )];
    for player in ["ann", "bob"] {
        outs.push(run(
            &mut k,
            script(
                "prompt.create",
                json!({"id": format!("q_{player}"), "kind": "choice", "playerId": player,
                       "title": format!("which of {sentence}?"), "choices": all}),
            ),
        ));
    }
    for viewer in ["north", "south", "spectator"] {
        let mut text = k
            .state()
            .project(&Viewer::parse(viewer))
            .to_canonical_json();
        for out in &outs {
            for e in events_for(&k, out, viewer) {
                text.push_str(&e.to_string());
            }
        }
        for card in all {
            let named = text.contains(&format!("\"{card}\""))
                || text.contains(&format!(" {card} "))
                || text.contains(&format!("of {card} "));
            assert_eq!(
                named,
                visible(viewer).contains(&card),
                "{viewer} and {card}: {text}"
            );
        }
    }
}

/// docs/observations.md, Positions: a card revealed from a hand shows
/// which card, never where it lies (API 3), not even with the whole hand
/// shown (how its owner keeps it is the owner's); API 2 and earlier showed
/// each revealed card's place (docs/lua-api.md, API versions).
#[test]
fn a_revealed_cards_place_is_shown_only_under_api_2() {
    for (api, one, both) in [
        (
            3,
            json!([{"index": null, "id": "n2"}]),
            json!([{"index": null, "id": "n1"}, {"index": null, "id": "n2"}]),
        ),
        (
            2,
            json!([{"index": 0, "id": "n2"}]),
            json!([{"index": 0, "id": "n2"}, {"index": 1, "id": "n1"}]),
        ),
    ] {
        let hand = json!({"id": "hand_n", "components": {"container": {
            "visibility": "private", "owner": "north", "items": ["n2", "n1"]}}});
        let card = |id: &str| json!({"id": id, "components": {"grabbable": {}}});
        let mut k = started(
            &json!({"apiVersion": api, "seats": ["north", "south"],
                    "entities": [hand, card("n1"), card("n2")]}),
            1,
        );
        run(
            &mut k,
            script("entity.reveal", json!({"entityId": "n2", "to": ["south"]})),
        );
        let shown = |k: &Kernel| {
            view(k, "south")["entities"]["hand_n"]["components"]["container"]["shown"].clone()
        };
        assert_eq!(shown(&k), one, "api {api}: one card of two");
        run(
            &mut k,
            script("entity.reveal", json!({"entityId": "n1", "to": ["south"]})),
        );
        assert_eq!(shown(&k), both, "api {api}: the whole hand");
    }
}
