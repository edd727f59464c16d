//! Callbacks: on_start, the four guards, handlers for global and entity
//! bindings, subcommands, rollback and failures (DESIGN §8).

mod common;

use common::*;
use serde_json::json;

fn press(
    k: &mut digipology_kernel::Kernel,
    host: &mut digipology_lua::LuaHost,
    who: &str,
    id: &str,
) -> digipology_kernel::Outcome {
    k.process_json(&player(who, "button.press", json!({"entityId": id})), host)
}

#[test]
fn on_start_runs_from_game_started_with_the_settings() {
    let (mut k, mut host) = global(
        r#"
        function on_start(event)
          storage.rounds = event.data.settings.rounds
          game.entity("sign"):set_text("started at " .. event.seq)
        end
    "#,
    );
    let outs = start(&mut k, &mut host);
    let types: Vec<_> = outs[0].events.iter().map(|e| e.type_name()).collect();
    assert_eq!(types, vec!["game.started", "text.changed"]);
    assert_eq!(storage(&k, "main"), json!({"rounds": 3}));
    assert_eq!(
        component(&k, "sign", "text")["value"],
        json!("started at 0")
    );
}

#[test]
fn a_guard_that_returns_false_and_a_reason_rejects_with_it() {
    let (mut k, mut host) = global(
        r#"
        function can_press(player, entity)
          if player.id ~= "p1" then return false, "only Ann may press " .. entity.id end
          return true
        end
    "#,
    );
    start(&mut k, &mut host);
    let out = press(&mut k, &mut host, "p2", "btn");
    let ev = events(&out);
    assert_eq!(ev[0].1["code"], json!("guard_denied"));
    assert_eq!(ev[0].1["message"], json!("only Ann may press btn"));
    assert!(press(&mut k, &mut host, "p1", "btn").accepted());
}

#[test]
fn every_bound_guard_must_approve_and_nil_is_not_approval() {
    let (mut k, mut host) = room(&[
        (
            "yes",
            "function can_grab(p, e) return true end",
            &[("global", None)],
        ),
        (
            "silent",
            "function can_grab(p, e) end",
            &[("b", Some("card"))],
        ),
    ]);
    start(&mut k, &mut host);
    // The entity binding of "silent" covers only `card`, and returns nothing.
    let out = k.process_json(
        &player("p1", "entity.grab", json!({"entityId": "card"})),
        &mut host,
    );
    assert_eq!(events(&out)[0].1["code"], json!("guard_denied"));
    let out = k.process_json(
        &player("p1", "entity.grab", json!({"entityId": "card2"})),
        &mut host,
    );
    assert!(out.accepted());
}

#[test]
fn guards_get_player_entity_and_the_drop_transform() {
    let (mut k, mut host) = global(
        r#"
        function can_grab(player, entity) return player.name == "Ann" and entity:has_tag("red") end
        function can_flip(player, entity) return entity.id ~= "card2", "card2 stays face down" end
        function can_drop(player, entity, transform)
          if transform.position.x > 10 then return false, "too far: " .. transform.position.x end
          return true
        end
    "#,
    );
    start(&mut k, &mut host);
    assert!(k
        .process_json(
            &player("p1", "entity.grab", json!({"entityId": "card"})),
            &mut host
        )
        .accepted());
    assert_eq!(
        events(&k.process_json(
            &player("p2", "entity.grab", json!({"entityId": "card2"})),
            &mut host
        ))[0]
            .1["code"],
        json!("guard_denied")
    );
    let t = |x: f64| json!({"position": {"x": x, "y": 0, "z": 0}, "rotation": {"x": 0, "y": 0, "z": 0, "w": 1}, "scale": {"x": 1, "y": 1, "z": 1}});
    let out = k.process_json(
        &player(
            "p1",
            "entity.drop",
            json!({"entityId": "card", "transform": t(20.5)}),
        ),
        &mut host,
    );
    assert_eq!(events(&out)[0].1["message"], json!("too far: 20.5"));
    assert!(k
        .process_json(
            &player(
                "p1",
                "entity.drop",
                json!({"entityId": "card", "transform": t(3.0)})
            ),
            &mut host
        )
        .accepted());
    let out = k.process_json(
        &player("p1", "entity.flip", json!({"entityId": "card2"})),
        &mut host,
    );
    assert_eq!(events(&out)[0].1["message"], json!("card2 stays face down"));
    assert!(k
        .process_json(
            &player("p1", "entity.flip", json!({"entityId": "card"})),
            &mut host
        )
        .accepted());
}

#[test]
fn a_guard_that_mutates_is_a_guard_mutation_error() {
    for body in [
        "game.entity('score'):add(1)",
        "storage.x = 1",
        "local n = math.random(6)",
        "self_flip = game.entity('card'):flip()",
    ] {
        let src = format!("function can_press(player, entity)\n  {body}\n  return true\nend\n");
        let (_, _, err) = press_fails(&src, "guard_mutation");
        assert_eq!(err["function"], json!("can_press"), "{body}");
        assert_eq!(err["line"], json!(2), "{body}: {err}");
    }
}

#[test]
fn handlers_reach_global_bindings_always_and_entity_bindings_for_their_entity() {
    let (mut k, mut host) = room(&[
        (
            "log",
            r#"
            function on_button_pressed(event)
              storage.seen = (storage.seen or "") .. event.data.entityId .. ";"
            end
        "#,
            &[("global", None)],
        ),
        (
            "btn_script",
            r#"
            function on_button_pressed(event)
              storage.mine = (storage.mine or 0) + 1
              assert(self.id == "btn")
            end
        "#,
            &[("b", Some("btn"))],
        ),
    ]);
    start(&mut k, &mut host);
    assert!(press(&mut k, &mut host, "p1", "btn").accepted());
    assert!(press(&mut k, &mut host, "p1", "btn2").accepted());
    assert_eq!(storage(&k, "log"), json!({"seen": "btn;btn2;"}));
    assert_eq!(storage(&k, "btn_script"), json!({"mine": 1}));
}

#[test]
fn the_event_table_has_type_seq_action_id_and_data() {
    let (mut k, mut host) = global(
        r#"
        function on_counter_changed(event)
          storage.last = { type = event.type, seq = event.seq, actionId = event.actionId,
                           value = event.data.value, previous = event.data.previous }
        end
    "#,
    );
    start(&mut k, &mut host);
    let out = k.process_json(&json!({"type": "counter.add", "actionId": "x1", "source": {"kind": "player", "playerId": "p1"}, "payload": {"entityId": "score", "amount": 4}}), &mut host);
    assert!(out.accepted());
    assert_eq!(
        storage(&k, "main"),
        json!({"last": {"type": "counter.changed", "seq": out.seq, "actionId": "x1", "value": 4, "previous": 0}})
    );
}

#[test]
fn a_handler_reads_its_own_writes() {
    let (mut k, mut host) = global(
        r#"
        function on_button_pressed(event)
          local s = game.entity("score")
          s:add(3)
          s:add(s.value * 10)
        end
    "#,
    );
    start(&mut k, &mut host);
    assert!(press(&mut k, &mut host, "p1", "btn").accepted());
    assert_eq!(component(&k, "score", "counter")["value"], json!(33));
}

#[test]
fn a_handler_that_changes_three_things_then_errors_leaves_the_hash_unchanged() {
    let (k, _, err) = press_fails(
        r#"
        function on_button_pressed(event)
          game.entity("score"):add(7)
          storage.note = "changed"
          game.entity("deck"):shuffle()
          local roll = math.random(6)
          error("and then it broke")
        end
    "#,
        "runtime",
    );
    assert_eq!(err["function"], json!("on_button_pressed"));
    assert_eq!(err["line"], json!(7));
    assert_eq!(err["scriptId"], json!("main"));
    assert_eq!(err["bindingId"], json!("global"));
    assert!(err["message"]
        .as_str()
        .unwrap_or("")
        .contains("and then it broke"));
    assert_eq!(storage(&k, "main"), json!(null));
}

#[test]
fn a_rejected_subcommand_dooms_the_action_even_when_pcalled() {
    let (_, _, err) = press_fails(
        r#"
        function on_button_pressed(event)
          game.entity("score"):add(1)
          local ok, err = pcall(function() game.entity("card"):roll() end)
          storage.caught = ok
        end
    "#,
        "subcommand",
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("die.roll rejected: missing_component"),
        "{err}"
    );
    assert_eq!(err["function"], json!("on_button_pressed"));
}

#[test]
fn an_uncaught_subcommand_rejection_names_its_line() {
    let (mut k, mut host) =
        global("function on_button_pressed(event)\n  game.entity('sign'):add(1)\nend\n");
    start(&mut k, &mut host);
    let err = script_error(
        &mut k,
        &mut host,
        player("p1", "button.press", json!({"entityId": "btn"})),
        "subcommand",
    );
    assert_eq!(err["line"], json!(2));
}

#[test]
fn handlers_see_cascaded_events() {
    let (mut k, mut host) = global(
        r#"
        function on_button_pressed(event) game.entity("score"):add(2) end
        function on_counter_changed(event)
          if event.data.entityId == "score" then game.entity("other"):set_value(event.data.value * 100) end
        end
    "#,
    );
    start(&mut k, &mut host);
    let out = press(&mut k, &mut host, "p1", "btn");
    let types: Vec<_> = out.events.iter().map(|e| e.type_name()).collect();
    assert_eq!(
        types,
        vec!["button.pressed", "counter.changed", "counter.changed"]
    );
    assert_eq!(component(&k, "other", "counter")["value"], json!(200));
}

#[test]
fn handler_names_follow_the_event_type() {
    let (mut k, mut host) = global(
        r#"
        function on_player_joined(event) storage.joined = (storage.joined or 0) + 1 end
        function on_deck_drawn(event) storage.drawn = #event.data.entityIds end
        function on_die_rolled(event) storage.rolled = event.data.value end
    "#,
    );
    start(&mut k, &mut host);
    assert!(k
        .process_json(
            &player(
                "p1",
                "deck.draw_to_container",
                json!({"deckId": "deck", "target": "hand", "count": 2})
            ),
            &mut host
        )
        .accepted());
    assert!(k
        .process_json(
            &player("p1", "die.roll", json!({"entityId": "d6"})),
            &mut host
        )
        .accepted());
    let st = storage(&k, "main");
    assert_eq!(st["joined"], json!(2));
    assert_eq!(st["drawn"], json!(2));
    assert!(st["rolled"].as_i64().is_some_and(|v| (1..=6).contains(&v)));
}

#[test]
fn a_dry_run_runs_scripts_and_changes_nothing() {
    let (mut k, mut host) =
        global("function on_button_pressed(e) game.entity('score'):add(1) storage.n = 1 end");
    start(&mut k, &mut host);
    let hash = k.state_hash();
    let action = digipology_kernel::Action::new(
        "button.press",
        digipology_kernel::Source::Player {
            player_id: "p1".into(),
        },
        json!({"entityId": "btn"}),
    );
    let out = k.dry_run(&action, &mut host);
    assert!(out.accepted());
    assert_eq!(out.events.len(), 2);
    assert_eq!(k.state_hash(), hash);
}

#[test]
fn print_goes_to_a_non_canonical_log() {
    let (mut k, mut host) =
        global("function on_button_pressed(e) print('pressed', e.data.entityId, {}) end");
    start(&mut k, &mut host);
    let hash = k.state_hash();
    assert!(press(&mut k, &mut host, "p1", "btn").accepted());
    assert_eq!(k.state_hash(), hash);
    assert_eq!(
        host.take_log(),
        vec!["[main] pressed\tbtn\ttable".to_owned()]
    );
}

#[test]
fn a_missing_bound_entity_is_a_load_error() {
    let r = try_room(
        &[("main", "", &[("b", Some("ghost"))])],
        digipology_lua::Limits::default(),
    );
    let err = r.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("ghost"), "{err}");
}

/// How a handler's error reaches `script.error`: its message (without a
/// traceback or a memory address) and the script line — the line of the
/// innermost script frame when the error carries no position of its own
/// (docs/lua-api.md, Errors). A handler erroring is the documented way to
/// say no, so this path is also the fast one (docs/performance.md).
#[test]
fn handler_errors_report_their_message_and_line() {
    let cases: [(&str, &str, u64); 7] = [
        ("error('no')", "scripts/main.lua:3: no", 3),
        ("error('runtime error: x', 0)", "runtime error: x", 3),
        ("error('no', 0)", "no", 3),
        ("error('no', 2)", "no", 3),
        (
            "local t = nil; local x = t.field",
            "attempt to index a nil value",
            3,
        ),
        ("error({})", "(error object is a table value)", 3),
        ("helper()", "scripts/main.lua:7: deep", 7),
    ];
    for (body, message, line) in cases {
        let src = format!(
            "\nfunction on_button_pressed(event)\n  if event.data.entityId == 'btn' then {body} end\nend\n\nfunction helper()\n  error('deep')\nend\n"
        );
        let (mut k, mut host, err) = press_fails(&src, "runtime");
        let got = err["message"].as_str().unwrap_or("");
        assert!(got.contains(message), "{body}: message {got:?}");
        assert!(!got.contains("traceback"), "{body}: {got:?}");
        assert_eq!(err["line"], json!(line), "{body}: {err}");
        still_serving(&mut k, &mut host);
    }
}
