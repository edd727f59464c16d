//! Card sets (docs/formats.md, Card sets): a `cards` definition expands at
//! load into exactly the entities a hand-written game.json lists — the
//! same canonical state, byte for byte, the same hash, the same game after
//! it — and a bad definition is refused with its key path, never a panic.

mod common;

use common::*;
use digipology_kernel::{state_from_game, state_from_game_streamed, Kernel, NoScripts, State};
use serde_json::{json, Value};

/// A deck made by two card sets (ranks × suits with object values and a
/// field, then two jokers), after a card listed by hand, in a hidden
/// container; a second container of chips; hands.
fn generated() -> Value {
    json!({
        "id": "sets", "seats": ["north", "south"],
        "entities": [
            {"id": "deck", "components": {"deck": {}, "container": {"visibility": "hidden", "items": ["blank"]}},
             "cards": [
                {"each": [
                    {"name": "rank", "values": [{"value": 1, "label": "A"}, {"value": 2, "label": "2"}, {"value": 3, "label": "3"}]},
                    {"name": "suit", "values": ["hearts", "spades"]}
                 ],
                 "card": {
                    "id": "{suit}_{rank}",
                    "tags": ["card", "{suit}"],
                    "props": {"rank": "{rank}", "suit": "{suit}", "label": "{rank.label} of {suit}", "code": "{{{rank}{suit}}}", "n": "{rank.value}"},
                    "components": {"flippable": {"flipped": true}, "grabbable": {}, "stackable": {}}
                 }},
                {"each": [{"name": "n", "values": [1, 2]}],
                 "card": {"id": "joker_{n}", "tags": ["card"], "props": {"label": "Joker"}, "components": {"flippable": {"flipped": true}, "grabbable": {}}}}
             ]},
            {"id": "blank", "tags": ["card"], "components": {"flippable": {"flipped": true}, "grabbable": {}}},
            {"id": "chips", "components": {"container": {}},
             "cards": {"each": [{"name": "color", "values": ["red", "blue"]}, {"name": "copy", "values": [1, 2]}],
                       "card": {"id": "chip_{color}{copy}", "props": {"color": "{color}", "worth": "{copy}", "big": true}}}},
            {"id": "hand_north", "components": {"container": {"visibility": "private", "owner": "north"}}},
            {"id": "hand_south", "components": {"container": {"visibility": "private", "owner": "south"}}}
        ]
    })
}

fn hand_card(suit: &str, rank: u32, label: &str) -> Value {
    json!({"id": format!("{suit}_{rank}"), "tags": ["card", suit],
           "props": {"rank": rank, "suit": suit, "label": format!("{label} of {suit}"), "code": format!("{{{rank}{suit}}}"), "n": rank},
           "components": {"flippable": {"flipped": true}, "grabbable": {}, "stackable": {}}})
}

/// The same table written out by hand, in another order.
fn hand_written() -> Value {
    json!({
        "id": "sets", "seats": ["north", "south"],
        "entities": [
            {"id": "hand_south", "components": {"container": {"visibility": "private", "owner": "south"}}},
            hand_card("spades", 3, "3"), hand_card("hearts", 1, "A"), hand_card("spades", 1, "A"),
            hand_card("hearts", 2, "2"), hand_card("spades", 2, "2"), hand_card("hearts", 3, "3"),
            {"id": "joker_1", "tags": ["card"], "props": {"label": "Joker"}, "components": {"flippable": {"flipped": true}, "grabbable": {}}},
            {"id": "joker_2", "tags": ["card"], "props": {"label": "Joker"}, "components": {"flippable": {"flipped": true}, "grabbable": {}}},
            {"id": "deck", "components": {"deck": {}, "container": {"visibility": "hidden", "items": [
                "blank", "hearts_1", "spades_1", "hearts_2", "spades_2", "hearts_3", "spades_3", "joker_1", "joker_2"]}}},
            {"id": "blank", "tags": ["card"], "components": {"flippable": {"flipped": true}, "grabbable": {}}},
            {"id": "chip_red1", "props": {"color": "red", "worth": 1, "big": true}},
            {"id": "chip_red2", "props": {"color": "red", "worth": 2, "big": true}},
            {"id": "chip_blue1", "props": {"color": "blue", "worth": 1, "big": true}},
            {"id": "chip_blue2", "props": {"color": "blue", "worth": 2, "big": true}},
            {"id": "chips", "components": {"container": {"items": ["chip_red1", "chip_red2", "chip_blue1", "chip_blue2"]}}},
            {"id": "hand_north", "components": {"container": {"visibility": "private", "owner": "north"}}}
        ]
    })
}

fn load(game: &Value, seed: u64) -> State {
    state_from_game(game, seed).unwrap_or_else(|e| panic!("loads: {e}"))
}

/// The game with `entities` given as text (as `run` reads it: lean).
fn load_streamed(game: &Value, seed: u64) -> State {
    let mut top = game.clone();
    let entities = top
        .as_object_mut()
        .and_then(|o| o.remove("entities"))
        .expect("entities");
    state_from_game_streamed(&top, &entities.to_string(), seed)
        .unwrap_or_else(|e| panic!("loads streamed: {e}"))
}

/// The entities keyed by id instead of listed.
fn keyed(game: &Value) -> Value {
    let mut g = game.clone();
    let map: serde_json::Map<String, Value> = g["entities"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| (e["id"].as_str().expect("id").to_owned(), e.clone()))
        .collect();
    g["entities"] = Value::Object(map);
    g
}

fn action(kind: &str, ty: &str, who: &str, payload: Value) -> Value {
    let source = match kind {
        "player" => json!({"kind": "player", "playerId": who}),
        "script" => json!({"kind": "script", "scriptId": "main", "bindingId": "global"}),
        _ => json!({"kind": "system"}),
    };
    json!({"type": ty, "source": source, "payload": payload})
}

#[test]
fn a_card_set_loads_as_its_hand_written_twin_and_plays_the_same() {
    let twin = hand_written();
    for seed in [0, 5] {
        let want = load(&twin, seed);
        for (how, made) in [
            ("array", load(&generated(), seed)),
            ("keyed", load(&keyed(&generated()), seed)),
            ("streamed", load_streamed(&generated(), seed)),
            ("streamed keyed", load_streamed(&keyed(&generated()), seed)),
        ] {
            assert_eq!(
                made.canonical_json(),
                want.canonical_json(),
                "{how}, seed {seed}"
            );
            assert_eq!(made.hash(), want.hash(), "{how}, seed {seed}");
        }
    }
    // The product order, the first dimension outermost, after the card
    // listed by hand; a lone placeholder keeps its value's type.
    let doc: Value = serde_json::from_str(&load(&generated(), 0).canonical_json()).expect("json");
    assert_eq!(
        doc["entities"]["deck"]["components"]["container"]["items"],
        json!([
            "blank", "hearts_1", "spades_1", "hearts_2", "spades_2", "hearts_3", "spades_3",
            "joker_1", "joker_2"
        ])
    );
    assert_eq!(
        doc["entities"]["hearts_1"]["props"],
        json!({"code": "{1hearts}", "label": "A of hearts", "n": 1, "rank": 1, "suit": "hearts"})
    );

    // The same game after it: every event and hash, action by action.
    let mut a = Kernel::new(load(&generated(), 3));
    let mut b = Kernel::new(load(&twin, 3));
    let steps = [
        action("system", "system.game_start", "", json!({})),
        action(
            "system",
            "system.player_joined",
            "",
            json!({"playerId": "p1"}),
        ),
        action(
            "system",
            "system.player_joined",
            "",
            json!({"playerId": "p2"}),
        ),
        action(
            "system",
            "system.seat_assign",
            "",
            json!({"playerId": "p1", "seatId": "north"}),
        ),
        action(
            "system",
            "system.seat_assign",
            "",
            json!({"playerId": "p2", "seatId": "south"}),
        ),
        action("player", "deck.shuffle", "p1", json!({"deckId": "deck"})),
        action(
            "player",
            "deck.deal",
            "p1",
            json!({"deckId": "deck", "targets": ["hand_north", "hand_south"], "cardsEach": 2}),
        ),
        action(
            "player",
            "deck.draw_to_container",
            "p2",
            json!({"deckId": "deck", "target": "hand_south", "count": 1}),
        ),
        action("script", "entity.flip", "", json!({"entityId": "hearts_2"})),
        action("player", "deck.shuffle", "p2", json!({"deckId": "chips"})),
        action(
            "player",
            "deck.draw_to_container",
            "p1",
            json!({"deckId": "deck", "target": "deck", "count": 1}),
        ),
    ];
    let mut accepted = 0;
    for (i, step) in steps.iter().enumerate() {
        let (x, y) = (
            a.process_json(step, &mut NoScripts),
            b.process_json(step, &mut NoScripts),
        );
        let lines = |o: &digipology_kernel::Outcome| {
            o.events
                .iter()
                .map(|e| e.to_json_line())
                .collect::<Vec<_>>()
        };
        assert_eq!(lines(&x), lines(&y), "step {i}");
        assert_eq!(a.state().hash(), b.state().hash(), "step {i}");
        if !x.accepted() {
            eprintln!("step {i} refused: {:?}", x.rejection());
        }
        accepted += usize::from(x.accepted());
    }
    // Most steps did something (the last two are refused: chips is no
    // deck, and a deck cannot draw into itself).
    assert_eq!(accepted, steps.len() - 2);
    assert_eq!(a.state().canonical_json(), b.state().canonical_json());
}

/// The state hash of examples/high-card's starting table (seed 0) when
/// its 16 cards were written out by hand (879 lines of game.json before
/// its deck became a card set): the card set makes the same table.
const HIGH_CARD_HASH: &str = "71fb2a497b2cc03a969724bd0a6dc4cf12bdb7f9dee278f10e0b7da521a6ae4d";

#[test]
fn the_high_card_example_makes_the_table_its_hand_written_deck_made() {
    let text =
        std::fs::read_to_string(root().join("examples/high-card/game.json")).expect("game.json");
    let game: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(load(&game, 0).hash(), HIGH_CARD_HASH);
    assert_eq!(load_streamed(&game, 0).hash(), HIGH_CARD_HASH);
    assert!(
        game["entities"][0].get("cards").is_some(),
        "the deck is a card set"
    );
}

/// `game` with `f` applied to its first entity's card set.
fn with_set(f: impl FnOnce(&mut Value)) -> Value {
    let mut g = json!({
        "seats": ["north"],
        "entities": [
            {"id": "deck", "components": {"deck": {}, "container": {}},
             "cards": {"each": [{"name": "rank", "values": [1, 2, 3]}, {"name": "suit", "values": ["a", "b"]}],
                       "card": {"id": "c{rank}{suit}", "props": {"rank": "{rank}"}}}}
        ]
    });
    f(&mut g);
    g
}

fn refused(game: &Value) -> String {
    match state_from_game(game, 0) {
        Ok(_) => panic!("loaded: {:.300}", game.to_string()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_card_sets_are_refused_with_their_key_path() {
    let set = |g: &Value| g["entities"][0]["cards"].clone();
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            with_set(|g| g["entities"][0]["cards"]["each"][1]["values"] = json!([])),
            "entities[\"deck\"].cards.each[1].values: ",
            "is empty",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["card"]["id"] = json!("c{rank}")),
            "entities[\"deck\"].cards.card.id: ",
            "the cards (rank 1, suit \"a\") and (rank 1, suit \"b\") both get the id \"c1\"",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["card"]["props"]["x"] = json!("{rnk}")),
            "entities[\"deck\"].cards.card.props.x: ",
            "unknown variable {rnk}: this card set's dimensions are rank, suit",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["card"]["props"]["x"] = json!("{rank.label}")),
            "entities[\"deck\"].cards.card.props.x: ",
            "value 0 of rank (1) has no field \"label\"",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["card"]["props"]["x"] = json!("{rank")),
            "entities[\"deck\"].cards.card.props.x: ",
            "never closed",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["card"]["id"] = json!("c}{rank}{suit}")),
            "entities[\"deck\"].cards.card.id: ",
            "no { before it",
        ),
        (
            with_set(|g| {
                let many: Vec<u32> = (0..1000).collect();
                g["entities"][0]["cards"]["each"] = json!([
                    {"name": "a", "values": many}, {"name": "b", "values": many}, {"name": "c", "values": many}]);
                g["entities"][0]["cards"]["card"] = json!({"id": "c{a}-{b}-{c}"});
            }),
            "entities[\"deck\"].cards: ",
            "makes 1000000000 cards (1000 × 1000 × 1000), more than the 100000",
        ),
        (
            with_set(|g| {
                let dims: Vec<Value> = (0..9).map(|i| json!({"name": format!("d{i}"), "values": [1]})).collect();
                g["entities"][0]["cards"]["each"] = json!(dims);
            }),
            "entities[\"deck\"].cards.each: ",
            "9 dimensions, more than the 8",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["each"] = json!({"rank": [1, 2]})),
            "entities[\"deck\"].cards.each: ",
            "must be a non-empty list of dimensions",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["each"][0]["values"] = json!("1,2")),
            "entities[\"deck\"].cards.each[0].values: ",
            "must be a list of values",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["each"][1]["values"] = json!(["a", "b", null])),
            "entities[\"deck\"].cards.each[1].values[2]: ",
            "must be a string, a number, a boolean, or an object with a \"value\"",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["each"][1]["values"][0] = json!({"label": "x"})),
            "entities[\"deck\"].cards.each[1].values[0]: ",
            "an object with a \"value\"",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["each"][1]["values"][0] = json!({"value": "a", "f": [1]})),
            "entities[\"deck\"].cards.each[1].values[0].f: ",
            "must be a string, a number or a boolean",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["each"][1]["name"] = json!("rank")),
            "entities[\"deck\"].cards.each[1].name: ",
            "\"rank\" is also the name of entities[\"deck\"].cards.each[0]",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["each"][1]["name"] = json!("2suit")),
            "entities[\"deck\"].cards.each[1].name: ",
            "must be a name of letters, digits and _",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["each"][1]["name"] = json!(7)),
            "entities[\"deck\"].cards.each[1].name: ",
            "must be a name",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["card"]["id"] = json!(7)),
            "entities[\"deck\"].cards.card.id: ",
            "every card needs an id template",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["card"]["heldBy"] = json!(null)),
            "entities[\"deck\"].cards.card: ",
            "unknown key \"heldBy\" (allowed: id, tags, props, components)",
        ),
        (
            with_set(|g| {
                g["entities"][0]["cards"].as_object_mut().expect("set").remove("card");
            }),
            "entities[\"deck\"].cards: ",
            "needs \"card\"",
        ),
        (
            with_set(|g| {
                g["entities"][0]["cards"].as_object_mut().expect("set").remove("each");
            }),
            "entities[\"deck\"].cards: ",
            "needs \"each\"",
        ),
        (
            with_set(|g| g["entities"][0]["cards"] = json!("52 cards")),
            "entities[\"deck\"].cards: ",
            "must be a card set like",
        ),
        (
            with_set(|g| g["entities"][0]["cards"] = json!([])),
            "entities[\"deck\"].cards: ",
            "is an empty list",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["card"]["components"] = json!({"counter": {"value": "{suit}"}})),
            "entities[\"deck\"].cards.card.components.counter.value: ",
            "(in the card \"c1a\": rank 1, suit \"a\")",
        ),
        (
            with_set(|g| g["entities"][0]["cards"]["card"]["tags"] = json!("{suit}")),
            "entities[\"deck\"].cards.card.tags: ",
            "must be an array of strings",
        ),
        (
            with_set(|g| g["entities"][0]["components"] = json!({"deck": {}})),
            "entities[\"deck\"].cards: ",
            "give \"deck\" a \"container\" component",
        ),
        (
            with_set(|g| g["entities"][0]["components"]["container"] = json!({"capacity": 4, "items": ["x"]})),
            "entities[\"deck\"].cards: ",
            "makes 6 cards, and with the 1 items before them the container would hold 7, over its capacity of 4",
        ),
        // A card's id taken by an entity written by hand, before it or
        // after it, or by another set's card: both are named.
        (
            with_set(|g| {
                g["entities"]
                    .as_array_mut()
                    .expect("list")
                    .insert(0, json!({"id": "c2b"}))
            }),
            "entities[\"deck\"].cards.card.id: ",
            "the card (rank 2, suit \"b\") gets the id \"c2b\" of the entity entities[\"c2b\"] defined before it",
        ),
        (
            with_set(|g| g["entities"].as_array_mut().expect("list").push(json!({"id": "c2b"}))),
            "entities[\"c2b\"]: ",
            "the id \"c2b\" is already a card's: entities[\"deck\"].cards (rank 2, suit \"b\") makes it",
        ),
        (
            with_set(|g| {
                let second = json!({"id": "deck2", "components": {"container": {}}, "cards": set(g)});
                g["entities"].as_array_mut().expect("list").push(second);
            }),
            "entities[\"deck2\"].cards.card.id: ",
            "the card (rank 1, suit \"a\") gets the id \"c1a\", which entities[\"deck\"].cards (rank 1, suit \"a\") makes too",
        ),
        (
            with_set(|g| {
                g["entities"][0]["cards"]["card"]["id"] = json!("deck{rank}{suit}");
                g["entities"][0]["cards"]["each"][0]["values"] = json!([""]);
                g["entities"][0]["cards"]["each"][1]["values"] = json!([""]);
            }),
            "entities[\"deck\"].cards.card.id: ",
            "of the entity entities[\"deck\"] defined before it",
        ),
        (
            with_set(|g| {
                g["prefabs"] = json!({"pack": {"components": {"container": {}}, "cards": set(g)}});
            }),
            "prefabs[\"pack\"].cards: ",
            "a prefab's container starts empty",
        ),
        // The cards must fit in the game's byte budget: checked card by
        // card, so a large template stops early.
        (
            with_set(|g| {
                g["limits"] = json!({"bytesMax": 65536});
                g["entities"][0]["cards"]["card"]["props"]["text"] = json!("x".repeat(20_000));
            }),
            "entities[\"deck\"].cards: ",
            "more than the table's byte budget of 65536 (limits.bytesMax",
        ),
    ];
    for (i, (game, path, message)) in cases.iter().enumerate() {
        let e = refused(game);
        assert!(e.starts_with(path), "case {i}: {e}");
        assert!(e.contains(message), "case {i}: {e}");
        if let Some(entities) = game.get("entities") {
            // The lean loader says the same.
            let mut top = game.clone();
            top.as_object_mut().expect("object").remove("entities");
            let lean = state_from_game_streamed(&top, &entities.to_string(), 0)
                .err()
                .map(|e| e.to_string());
            assert_eq!(lean.as_deref(), Some(e.as_str()), "case {i}");
        }
    }
}

/// `check` names a bad card set's key path, at the line of the value in
/// game.json, like its other messages; `run` refuses it the same way.
#[test]
fn check_names_a_bad_card_set_at_its_line() {
    let dir = scratch("card-sets");
    let game = dir.join("cards");
    std::fs::create_dir_all(&game).expect("dir");
    let text = "{\n  \"seats\": [\"north\"],\n  \"entities\": [\n    {\"id\": \"deck\", \"components\": {\"deck\": {}, \"container\": {}},\n     \"cards\": {\n       \"each\": [\n         {\"name\": \"rank\", \"values\": [1, 2, 3]},\n         {\"name\": \"suit\", \"values\": [\"a\", \"b\", null]}\n       ],\n       \"card\": {\"id\": \"c{rank}{suit}\"}\n     }}\n  ]\n}\n";
    std::fs::write(game.join("game.json"), text).expect("write");
    let out = run(&["check", game.to_str().expect("utf-8")], b"");
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.contains(&format!(
            "{}:8: entities[\"deck\"].cards.each[1].values[2]: must be a string",
            game.join("game.json").display()
        )),
        "{report}"
    );
    assert!(report.contains("1 problem found"), "{report}");
    assert_no_panic(&out);
    let ran = run(&["run", game.to_str().expect("utf-8")], b"");
    assert_eq!(ran.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&ran.stderr).contains("entities[\"deck\"].cards.each[1].values[2]"),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_no_panic(&ran);

    // Fixed, it passes, and makes its six cards.
    std::fs::write(game.join("game.json"), text.replace(", null]", "]")).expect("write");
    let ok = run(&["check", game.to_str().expect("utf-8")], b"");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
}

/// The example of docs/formats.md, Card sets, makes what the page says:
/// 52 cards in product order, the first one as written out there.
#[test]
fn the_docs_example_makes_the_deck_it_describes() {
    let doc = std::fs::read_to_string(root().join("docs/formats.md")).expect("docs");
    let section = doc
        .split("### Card sets")
        .nth(1)
        .expect("a Card sets section");
    let block = |tag: &str| {
        let start = section.find(&format!("```{tag}\n")).expect("a block") + tag.len() + 4;
        section[start..][..section[start..].find("```").expect("its end")].to_owned()
    };
    let game: Value = serde_json::from_str(&block("json")).expect("the example is JSON");
    let state: Value = serde_json::from_str(&load(&game, 0).canonical_json()).expect("json");
    let items = state["entities"]["deck"]["components"]["container"]["items"]
        .as_array()
        .expect("items")
        .clone();
    assert_eq!(items.len(), 52);
    assert_eq!(items[0], "spades_1");
    assert_eq!(items[13], "hearts_1");
    assert_eq!(items[51], "clubs_13");
    let shown: Value = serde_json::from_str(&block("text")).expect("the written-out card");
    let card = &state["entities"]["spades_1"];
    assert_eq!(card["tags"], shown["tags"]);
    assert_eq!(card["props"], shown["props"]);
    assert_eq!(card["components"]["flippable"]["flipped"], true);
    assert_eq!(state["entities"]["clubs_12"]["props"]["label"], "Q♣");
}

/// A template that copies a big value many times is refused before a byte
/// of it is written: a small game.json cannot make the loader build more
/// than the byte budget (a review found 110 KB of game.json reaching
/// 427 MB before the refusal).
#[test]
fn a_template_that_copies_a_big_value_is_refused_before_it_is_built() {
    let big = "x".repeat(10_000);
    let copies = "{rank.s}".repeat(10_000);
    let game = with_set(|g| {
        g["entities"][0]["cards"]["each"][0]["values"] = json!([{"value": 1, "s": big}]);
        g["entities"][0]["cards"]["card"]["props"]["p"] = json!(copies);
    });
    let m = refused(&game);
    assert!(
        m.contains("would write 1000000")
            && m.contains("bytes of values, more than the table's byte budget has left"),
        "{m}"
    );
}
