//! Proxies and the game API: every read and every write method, storage,
//! randomness, and handles that outlive their entity.

mod common;

use common::*;
use digipology_kernel::Kernel;
use digipology_lua::LuaHost;
use serde_json::{json, Value};

/// Runs `body` inside a button handler and returns the script's storage.
fn run(body: &str) -> (Kernel, LuaHost, Value) {
    let src = format!("function on_button_pressed(event)\n{body}\nend\n");
    let (mut k, mut host) = global(&src);
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
    let st = storage(&k, "main");
    (k, host, st)
}

#[test]
fn entity_reads() {
    let (_, _, st) = run(r#"
        local c = game.entity("card")
        storage.id = c.id
        storage.pos = c.position
        storage.flipped = c.flipped
        storage.tags = c.tags
        storage.red = c:has_tag("red")
        storage.blue = c:has_tag("blue")
        storage.rank = c.props.rank
        storage.grabbable = c:get("grabbable")
        storage.has_die = c:has("die")
        storage.placement = c.placement
        storage.score = game.entity("score").value
        storage.counter = game.entity("score"):get("counter")
        storage.text = game.entity("sign").text
        storage.faces = game.entity("d6").faces
        storage.items = #game.entity("deck"):items()
        storage.top = game.entity("deck"):top().id
        storage.in_deck = game.entity("c1").placement
        storage.locked = game.entity("lockbox").locked
        storage.missing = game.entity("nope") == nil
    "#);
    assert_eq!(st["id"], json!("card"));
    assert_eq!(st["pos"], json!({"x": 1, "y": 0, "z": 0}));
    assert_eq!(st["flipped"], json!(false));
    assert_eq!(st["tags"], json!(["card", "red"]));
    assert_eq!(
        (st["red"].clone(), st["blue"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(st["rank"], json!(7));
    assert_eq!(st["grabbable"], json!({"enabled": true}));
    assert_eq!(st["has_die"], json!(false));
    assert_eq!(st["placement"], json!({"kind": "world"}));
    assert_eq!(st["score"], json!(0));
    assert_eq!(st["counter"], json!({"value": 0, "min": 0, "max": 100}));
    assert_eq!(st["text"], json!("hello"));
    assert_eq!(st["faces"], json!([1, 2, 3, 4, 5, 6]));
    assert_eq!(st["items"], json!(3));
    assert_eq!(st["top"], json!("c3"));
    assert_eq!(st["in_deck"], json!({"kind": "container", "id": "deck"}));
    assert_eq!(st["locked"], json!(false));
    assert_eq!(st["missing"], json!(true));
}

#[test]
fn held_by_is_a_player_proxy() {
    let (mut k, mut host) =
        global("function on_button_pressed(e) storage.holder = game.entity('card').held_by.id end");
    start(&mut k, &mut host);
    assert!(k
        .process_json(
            &player("p2", "entity.grab", json!({"entityId": "card"})),
            &mut host
        )
        .accepted());
    assert!(k
        .process_json(
            &player("p1", "button.press", json!({"entityId": "btn"})),
            &mut host
        )
        .accepted());
    assert_eq!(storage(&k, "main"), json!({"holder": "p2"}));
}

#[test]
fn game_reads() {
    let (_, _, st) = run(r#"
        storage.n = #game.entities()
        storage.first = game.entities()[1].id
        local cards = {}
        for i, e in ipairs(game.entities("card")) do cards[i] = e.id end
        storage.cards = cards
        local ps = {}
        for i, p in ipairs(game.players()) do ps[i] = p.id end
        storage.players = ps
        storage.ann = game.player("p1").name
        storage.nobody = game.player("zz") == nil
        storage.seats = game.seats()
        storage.rounds = game.settings.rounds
        storage.seq = game.sequence
        storage.action = game.action_id
    "#);
    assert_eq!(st["n"], json!(18));
    assert_eq!(st["first"], json!("btn"));
    assert_eq!(st["cards"], json!(["card", "card2"]));
    assert_eq!(st["players"], json!(["p1", "p2"]));
    assert_eq!(st["ann"], json!("Ann"));
    assert_eq!(st["nobody"], json!(true));
    assert_eq!(st["seats"], json!([{"id": "north"}, {"id": "south"}]));
    assert_eq!(st["rounds"], json!(3));
    assert_eq!(st["seq"], json!(3));
    assert_eq!(st["action"], json!("a3"));
}

#[test]
fn entity_writes_issue_subcommands() {
    let (k, _, _) = run(r#"
        game.entity("card"):flip()
        game.entity("lockbox"):set_locked(true)
        game.entity("score"):set_value(40)
        game.entity("score"):add(2)
        game.entity("sign"):set_text("bye")
        game.entity("d6"):roll()
        game.entity("deck"):shuffle()
        game.entity("deck"):draw_to(game.entity("hand"), 2)
        game.entity("card2"):move({x = 7, z = 3})
    "#);
    assert_eq!(component(&k, "card", "flippable"), json!({"flipped": true}));
    assert_eq!(
        component(&k, "lockbox", "lockable"),
        json!({"locked": true})
    );
    assert_eq!(component(&k, "score", "counter")["value"], json!(42));
    assert_eq!(component(&k, "sign", "text"), json!({"value": "bye"}));
    assert!(component(&k, "d6", "die")["value"].as_i64().is_some());
    assert_eq!(
        component(&k, "hand", "container")["items"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    assert_eq!(
        component(&k, "card2", "transform")["position"],
        json!({"x": 7, "y": 0, "z": 3})
    );
}

#[test]
fn container_snap_and_stack_writes() {
    let (k, _, st) = run(r#"
        local c1 = game.entity("c1")
        c1:move_to(game.entity("hand"))
        c1:move_to(nil)
        game.entity("slot"):attach(game.entity("card"))
        game.entity("card2"):attach_to("slot")
        local s = game.create_stack("pile", {game.entity("s_a"), "s_b"})
        storage.stack_items = #s:items()
        storage.stack_top = s:top().id
        storage.card_stack = game.entity("s_b"):stack().id
        s:remove_top()
        storage.after = #game.stack("pile"):items()
        game.stack("pile"):dissolve()
        storage.gone = game.stack("pile") == nil
    "#);
    assert_eq!(
        component(&k, "slot", "snap_point")["attached"],
        json!(["card", "card2"])
    );
    assert_eq!(
        component(&k, "deck", "container")["items"],
        json!(["c2", "c3"])
    );
    assert_eq!(st["stack_items"], json!(2));
    assert_eq!(st["stack_top"], json!("s_b"));
    assert_eq!(st["card_stack"], json!("pile"));
    assert_eq!(st["after"], json!(1));
    assert_eq!(st["gone"], json!(true));
}

#[test]
fn storage_is_a_plain_looking_canonical_table() {
    let (_, _, st) = run(r#"
        storage.count = 1
        storage.count = storage.count + 1
        storage.players = {}
        storage.players.p1 = {score = 3, hand = {"a", "b"}}
        storage.players.p1.score = storage.players.p1.score + 1
        table.insert(storage.players.p1.hand, "c")
        storage.list = {10, 20, 30}
        storage.list[4] = 40
        storage.list[4] = nil
        storage.temp = "x"
        storage.temp = nil
        local keys = {}
        for k in pairs(storage) do keys[#keys + 1] = k end
        storage.keys = keys
        storage.len = #storage.list
        storage.flag = true
        storage.pi = 3.5
    "#);
    assert_eq!(
        st,
        json!({"count": 2, "players": {"p1": {"score": 4, "hand": ["a", "b", "c"]}}, "list": [10, 20, 30],
               "keys": ["count", "list", "players"], "len": 3, "flag": true, "pi": 3.5})
    );
}

#[test]
fn storage_refuses_values_without_a_canonical_form() {
    for body in [
        "storage.f = print",
        "storage.n = 0/0",
        "storage.t = {1, 2, x = 3}",
        "storage.list = {1,2,3} storage.list[1] = nil",
    ] {
        let src = format!("function on_button_pressed(event)\n{body}\nend\n");
        let (_, _, _) = press_fails(&src, "runtime");
    }
}

#[test]
fn storage_is_per_script() {
    let (mut k, mut host) = room(&[
        (
            "a",
            "function on_button_pressed(e) storage.v = 'a' end",
            &[("global", None)],
        ),
        (
            "b",
            "function on_button_pressed(e) storage.v = 'b' end",
            &[("global", None)],
        ),
    ]);
    start(&mut k, &mut host);
    assert!(k
        .process_json(
            &player("p1", "button.press", json!({"entityId": "btn"})),
            &mut host
        )
        .accepted());
    assert_eq!(storage(&k, "a"), json!({"v": "a"}));
    assert_eq!(storage(&k, "b"), json!({"v": "b"}));
}

#[test]
fn random_draws_from_the_canonical_rng() {
    let (_, _, a) = run("local t = {} for i = 1, 20 do t[i] = math.random(6) end storage.r = t storage.f = math.random() storage.h = random(10, 12)");
    let (_, _, b) = run("local t = {} for i = 1, 20 do t[i] = math.random(6) end storage.r = t storage.f = math.random() storage.h = random(10, 12)");
    assert_eq!(a, b);
    let rolls = a["r"].as_array().cloned().unwrap_or_default();
    assert!(rolls
        .iter()
        .all(|v| (1..=6).contains(&v.as_i64().unwrap_or(0))));
    assert!(a["f"].as_f64().is_some_and(|f| (0.0..1.0).contains(&f)));
    assert!(a["h"].as_i64().is_some_and(|h| (10..=12).contains(&h)));
}

#[test]
fn pairs_iterates_in_sorted_key_order() {
    let (_, _, st) = run(r#"
        local t = {zeta = 1, alpha = 2, [3] = "c", [1] = "a", mid = 3, [true] = "t", [2.5] = "x"}
        local order = {}
        for k in pairs(t) do order[#order + 1] = tostring(k) end
        storage.order = table.concat(order, ",")
    "#);
    assert_eq!(st["order"], json!("1,2.5,3,alpha,mid,zeta,true"));
}

#[test]
fn a_proxy_whose_entity_is_gone_errors_clearly() {
    // A proxy's slots cannot be forged: rawset into it (a handle or an id)
    // is refused at that line, before the proxy is used.
    for src in [
        "function on_button_pressed(event)\n  local e = game.entity('card')\n  rawset(e, 0, 0)\n  e:flip()\nend\n",
        "function on_button_pressed(event)\n  local e = game.entity('card')\n  rawset(e, 1, 'card2')\n  e:flip()\nend\n",
    ] {
        let (_, _, err) = press_fails(src, "sandbox");
        assert!(
            err["message"].as_str().unwrap_or("").contains("rawset cannot change"),
            "{err}"
        );
        assert_eq!(err["line"], json!(3));
    }
}

#[test]
fn proxies_are_read_only_and_compare_by_id() {
    let (_, _, st) = run(r#"
        storage.same = game.entity("card") == game.entity("card")
        storage.ok = pcall(function() game.entity("card").id = "x" end)
        storage.game_ok = pcall(function() game.entity = nil end)
    "#);
    assert_eq!(st, json!({"same": true, "ok": false, "game_ok": false}));
}

#[test]
fn require_loads_the_games_own_modules() {
    let state = digipology_kernel::state_from_game(&game(), 5).expect("game");
    let mut modules = digipology_lua::Modules::new();
    modules.insert(
        "util.math".into(),
        (
            "scripts/util/math.lua".into(),
            "local M = {} function M.double(x) return x * 2 end return M".into(),
        ),
    );
    let spec = digipology_lua::ScriptSpec {
        id: "main".into(),
        file: "scripts/main.lua".into(),
        source: "local m = require('util.math')\nfunction on_button_pressed(e) storage.v = m.double(21) end".into(),
        bindings: vec![digipology_lua::BindingSpec { id: "global".into(), entity: None }],
    };
    let mut host =
        LuaHost::new(&[spec], modules, &state, digipology_lua::Limits::default()).expect("loads");
    let mut k = Kernel::new(state);
    start(&mut k, &mut host);
    assert!(k
        .process_json(
            &player("p1", "button.press", json!({"entityId": "btn"})),
            &mut host
        )
        .accepted());
    assert_eq!(storage(&k, "main"), json!({"v": 42}));
}

/// `storage` keeps the nodes of its top-level tables, yet a read means
/// what it always did: a float key is refused however often the integer
/// key was read before, a table replaced by a number reads as the number,
/// and a nested table's node still reads its current contents.
#[test]
fn kept_storage_nodes_read_what_storage_holds_now() {
    let (mut k, mut host) = global(
        r#"
        function on_start(event)
          storage.rows = { { v = 1 } }
          storage.g = { rows = { { v = 2 } } }
          storage.t = { x = 1 }
        end
        function on_button_pressed(event)
          local a = storage.rows[1].v + storage.g.rows[1].v
          local top_float = pcall(function() return storage.rows[1.0] end)
          local nested_float = pcall(function() return storage.g.rows[1.0] end)
          local before = storage.t
          storage.t = 5
          storage.g.rows[1].v = storage.g.rows[1].v + 1
          storage.result = { a = a, top_float = top_float, nested_float = nested_float,
            t = storage.t, x = before.x, same = rawequal(storage.rows, storage.rows) }
          storage.t = { x = 2 }
        end
    "#,
    );
    start(&mut k, &mut host);
    for (press, a) in [(1, 3), (2, 4)] {
        let out = k.process_json(
            &player("p1", "button.press", json!({"entityId": "btn"})),
            &mut host,
        );
        assert!(out.accepted(), "press {press}: {:?}", events(&out));
        let r = &storage(&k, "main")["result"];
        assert_eq!(
            *r,
            json!({"a": a, "top_float": false, "nested_float": false, "t": 5, "same": true}),
            "press {press}"
        );
    }
}

/// `LuaHost::forget_match` (a room starting another match): a module a
/// handler required runs again when required again, as in a new room; a
/// module the script required while loading stays loaded.
#[test]
fn forgetting_a_match_forgets_the_modules_required_during_play() {
    let state = digipology_kernel::state_from_game(&game(), 5).expect("game");
    let mut modules = digipology_lua::Modules::new();
    for (name, source) in [
        ("early", "return { n = 7 }"),
        ("late", "storage.loads = (storage.loads or 0) + 1 return {}"),
    ] {
        modules.insert(name.into(), (format!("scripts/{name}.lua"), source.into()));
    }
    let spec = digipology_lua::ScriptSpec {
        id: "main".into(),
        file: "scripts/main.lua".into(),
        source: "local early = require('early')
                 function on_button_pressed(e) require('late') storage.n = early.n end"
            .into(),
        bindings: vec![digipology_lua::BindingSpec {
            id: "global".into(),
            entity: None,
        }],
    };
    let mut host =
        LuaHost::new(&[spec], modules, &state, digipology_lua::Limits::default()).expect("loads");
    let mut k = Kernel::new(state.clone());
    start(&mut k, &mut host);
    let press = |k: &mut Kernel, host: &mut LuaHost| {
        assert!(k
            .process_json(
                &player("p1", "button.press", json!({"entityId": "btn"})),
                host
            )
            .accepted());
    };
    press(&mut k, &mut host);
    press(&mut k, &mut host);
    assert_eq!(storage(&k, "main"), json!({"loads": 1, "n": 7}));
    host.forget_match().expect("forgets");
    let mut k = Kernel::new(state);
    start(&mut k, &mut host);
    press(&mut k, &mut host);
    assert_eq!(storage(&k, "main"), json!({"loads": 1, "n": 7}));
}

#[test]
fn spawn_deal_draw_to_world_and_die_faces() {
    let (k, _, st) = run(r#"
        local t = game.spawn("token", {position = {x = 3, y = 0, z = 4}, props = {color = "blue"}})
        storage.token = t.id
        storage.color = t.props.color
        storage.pos = t.position
        local deck = game.entity("deck")
        deck:deal({game.entity("hand"), "p2"}, 1)
        storage.hand = #game.entity("hand"):items()
        storage.p2 = game.entity("hand_p2"):items()[1].id
        local card = deck:draw_to_world({position = {x = 1, y = 0, z = 1}, rotation = {x = 0, y = 0, z = 0, w = 1}, scale = {x = 1, y = 1, z = 1}})
        storage.drawn = card.id
        storage.drawn_where = card.placement.kind
        game.entity("d6"):set_value(5)
        storage.face = game.entity("d6").value
    "#);
    let token = st["token"].as_str().unwrap_or("");
    assert!(
        token.starts_with("token_a") && token.ends_with("_1"),
        "{token}"
    );
    assert_eq!(st["color"], json!("blue"));
    assert_eq!(st["pos"], json!({"x": 3, "y": 0, "z": 4}));
    assert_eq!(
        (st["hand"].clone(), st["p2"].clone()),
        (json!(1), json!("c2"))
    );
    assert_eq!(
        (st["drawn"].clone(), st["drawn_where"].clone()),
        (json!("c1"), json!("world"))
    );
    assert_eq!(st["face"], json!(5));
    k.state().check_invariants().expect("invariants");
}

#[test]
fn reading_a_field_of_a_destroyed_entity_errors_at_the_creators_line() {
    // Read inside a function of the script's own, so the line must come
    // from the error's position (a handler's own frame would also be the
    // innermost script line the runtime falls back to).
    for read in [
        "t.locked",
        "t.placement",
        "t:items()",
        "t.value",
        "t:stack()",
    ] {
        let src = format!(
            "local function where(t)\n  local x = {read}\n  return x\nend\nfunction on_button_pressed(event)\n  local t = game.entity('card')\n  t:destroy()\n  local x = where(t)\nend\n"
        );
        let (_, _, err) = press_fails(&src, "runtime");
        let message = err["message"].as_str().unwrap_or("");
        assert!(
            message.contains("'card' no longer exists") && message.contains("main.lua:2:"),
            "{read}: {err}"
        );
        assert_eq!(err["line"], json!(2), "{read}: {err}");
    }
}

#[test]
fn a_proxy_to_a_destroyed_entity_errors_and_touches_nothing_else() {
    let src = "function on_button_pressed(event)\n  local t = game.entity('card')\n  t:destroy()\n  storage.gone = not t:exists()\n  t:flip()\nend\n";
    let (k, _, err) = press_fails(src, "runtime");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("'card' no longer exists"),
        "{err}"
    );
    assert_eq!(err["line"], json!(5));
    // The whole action rolled back: the card is still there.
    assert!(k.state().entity("card").is_some());
}

#[test]
fn move_all_to_issues_the_same_moves_as_a_move_to_loop() {
    let looped = "function on_button_pressed(event)\n  local hand = game.entity('hand')\n  for _, c in ipairs(game.entity('deck'):items()) do c:move_to(hand) end\nend\n";
    let batched =
        "function on_button_pressed(event)\n  game.entity('deck'):move_all_to('hand')\nend\n";
    let by_proxy = "function on_button_pressed(event)\n  game.entity('deck'):move_all_to(game.entity('hand'))\nend\n";
    let press = player("p1", "button.press", json!({"entityId": "btn"}));
    let run = |src: &str| {
        let (mut k, mut host) = global(src);
        start(&mut k, &mut host);
        let out = k.process_json(&press, &mut host);
        assert!(out.accepted(), "{:?}", events(&out));
        (
            events(&out),
            k.state_hash(),
            component(&k, "hand", "container"),
        )
    };
    let (ev_loop, hash_loop, hand) = run(looped);
    assert_eq!(hand["items"], json!(["c1", "c2", "c3"]));
    let moved: Vec<_> = ev_loop
        .iter()
        .filter(|(t, _)| t == "container.moved")
        .map(|(_, d)| d["entityId"].clone())
        .collect();
    assert_eq!(moved, vec![json!("c1"), json!("c2"), json!("c3")]);
    for src in [batched, by_proxy] {
        let (ev, hash, _) = run(src);
        assert_eq!(ev, ev_loop, "{src}");
        assert_eq!(hash, hash_loop, "{src}");
    }
}

#[test]
fn move_all_to_a_non_container_fails_the_action_and_moves_nothing() {
    let src =
        "function on_button_pressed(event)\n  game.entity('deck'):move_all_to('score')\nend\n";
    let (k, _, err) = press_fails(src, "subcommand");
    assert_eq!(err["line"], json!(2), "{err}");
    assert_eq!(
        component(&k, "deck", "container")["items"],
        json!(["c1", "c2", "c3"])
    );
}

/// `game.seats()` lists seats in the manifest's order (not by id), with
/// their players; `game.seat`, `game.seat_of` and `game.actor` answer
/// who sits where and who caused the running action.
#[test]
fn seats_come_in_seat_order_and_handlers_know_the_actor() {
    use digipology_kernel::{state_from_game, Kernel};
    use digipology_lua::{BindingSpec, Limits, LuaHost, Modules, ScriptSpec};
    let game = json!({
        "seats": ["south", "north", "east"],
        "entities": [{"id": "btn", "components": {"button": {}}}]
    });
    let src = r#"
        function on_button_pressed(event)
          local order = {}
          for i, s in ipairs(game.seats()) do order[i] = s.id .. "=" .. (s.player or "-") end
          storage.order = table.concat(order, ",")
          storage.actor = game.actor
          storage.seat = game.seat_of(game.actor)
          storage.north = game.seat("north")
          storage.nobody = game.seat("east") == nil and game.seat_of("zz") == nil
        end
        function on_seat_assigned(event)
          storage.assigned_by = game.actor or "system"
        end
    "#;
    let state = state_from_game(&game, 1).expect("game loads");
    let specs = [ScriptSpec {
        id: "main".into(),
        file: "scripts/main.lua".into(),
        source: src.into(),
        bindings: vec![BindingSpec {
            id: "global".into(),
            entity: None,
        }],
    }];
    let mut host = LuaHost::new(&specs, Modules::new(), &state, Limits::default()).expect("loads");
    let mut k = Kernel::new(state);
    let system = |ty: &str, payload: serde_json::Value| json!({"type": ty, "source": {"kind": "system"}, "payload": payload});
    for a in [
        system("system.game_start", json!({})),
        system("system.player_joined", json!({"playerId": "ann"})),
        system("system.player_joined", json!({"playerId": "bob"})),
        system(
            "system.seat_assign",
            json!({"playerId": "bob", "seatId": "north"}),
        ),
        system(
            "system.seat_assign",
            json!({"playerId": "ann", "seatId": "south"}),
        ),
        system(
            "system.seat_assign",
            json!({"playerId": "ann", "seatId": "west"}),
        ),
        player("bob", "button.press", json!({"entityId": "btn"})),
    ] {
        let out = k.process_json(&a, &mut host);
        assert!(out.accepted(), "{:?}", events(&out));
    }
    assert_eq!(
        storage(&k, "main"),
        json!({
            "order": "south=ann,north=bob,east=-,west=ann",
            "actor": "bob",
            "seat": "north",
            "north": "bob",
            "nobody": true,
            "assigned_by": "system"
        })
    );
}

/// A table read from `storage` and stored again (under another key, inside
/// another table, in a subcommand payload or a timer's data) is stored as a
/// copy of its contents — never as the empty table a storage view is
/// underneath.
#[test]
fn a_storage_table_stored_elsewhere_is_copied_whole() {
    let (k, _, st) = run(r#"
        storage.a = {x = 1, y = {2, 3}, z = {w = "deep"}}
        storage.b = storage.a
        storage.c = {inner = storage.a.z, list = {storage.a.y}}
        storage.a.x = 5
        game.entity("card"):move({x = 4})
        local e = game.spawn("token", {position = {x = 1, y = 0, z = 1}, props = storage.a.z})
        storage.spawned_props = e.props
    "#);
    assert_eq!(st["a"], json!({"x": 5, "y": [2, 3], "z": {"w": "deep"}}));
    assert_eq!(st["b"], json!({"x": 1, "y": [2, 3], "z": {"w": "deep"}}));
    assert_eq!(st["c"], json!({"inner": {"w": "deep"}, "list": [[2, 3]]}));
    assert_eq!(st["spawned_props"], json!({"color": "red", "w": "deep"}));
    drop(k);
}

/// `e.held_by` is a player proxy with the player's name, like
/// `game.player(id)`.
#[test]
fn held_by_carries_the_players_name() {
    let (mut k, mut host) = global(
        r#"
        function on_button_pressed(event)
          local h = game.entity("card").held_by
          storage.holder = h.id
          storage.name = h.name
          storage.same = h == game.player("p1")
        end
    "#,
    );
    start(&mut k, &mut host);
    for a in [
        player("p1", "entity.grab", json!({"entityId": "card"})),
        player("p2", "button.press", json!({"entityId": "btn"})),
    ] {
        let out = k.process_json(&a, &mut host);
        assert!(out.accepted(), "{:?}", events(&out));
    }
    assert_eq!(
        storage(&k, "main"),
        json!({"holder": "p1", "name": "Ann", "same": true})
    );
}

/// `game.spawn` and `deck:draw_to_world` take a partial transform or a bare
/// position, like `e:move`: missing parts come from the identity (spawn)
/// or from the deck's own transform (draw).
#[test]
fn spawn_and_draw_to_world_complete_partial_transforms() {
    let (k, _, st) = run(r#"
        local a = game.spawn("token", {transform = {position = {x = 2, y = 0, z = 3}}})
        local b = game.spawn("token", {transform = {x = 7}})
        local c = game.entity("deck"):draw_to_world({x = 5, y = 0, z = 5})
        local d = game.entity("deck"):draw_to_world({position = {x = 6, y = 0, z = 6}, scale = {x = 2, y = 2, z = 2}})
        storage.a = a.position
        storage.b = b.position
        storage.c = c.position
        storage.d = d.transform.scale
    "#);
    assert_eq!(st["a"], json!({"x": 2, "y": 0, "z": 3}));
    assert_eq!(st["b"], json!({"x": 7, "y": 0, "z": 0}));
    assert_eq!(st["c"], json!({"x": 5, "y": 0, "z": 5}));
    assert_eq!(st["d"], json!({"x": 2, "y": 2, "z": 2}));
    drop(k);
}

#[test]
fn get_and_has_on_a_table_posing_as_a_proxy_name_no_entity() {
    // `get`/`has` read through a native that checks the handle itself: a
    // handle that is not an integer (missing, a float, a string) names no
    // entity, exactly as a stale proxy does — never another entity.
    for forged in ["{}", "{[0] = 2.0}", "{[0] = \"2\"}"] {
        for method in ["get", "has"] {
            let src = format!(
                r#"
                function on_button_pressed(event)
                  local f = game.entity("score").{method}
                  f({forged}, "counter")
                end
            "#
            );
            let (_, _, err) = press_fails(&src, "runtime");
            let msg = err["message"].as_str().unwrap_or("");
            assert!(
                msg.contains("no longer exists"),
                "{method} on {forged}: {msg}"
            );
            assert_eq!(err["line"], json!(4), "{method} on {forged}: {err}");
        }
    }
}

/// A storage read always returns what storage holds now: after an action
/// that changed storage and was rolled back, after a deeper write that may
/// turn a scalar into a table, after another binding of the same script
/// wrote, and on another state entirely (anything the runtime keeps
/// between reads must never outlive what it describes).
#[test]
fn storage_reads_are_never_stale() {
    let src = r#"
        function on_button_pressed(event)
          if self then
            -- The binding on btn2: it writes what the global one read.
            storage.k = "second"
            return
          end
          storage.seen = (storage.seen or "") .. tostring(storage.k) .. ","
          if event.data.entityId == "btn" then
            storage.n = (storage.n or 0) + 1
            storage.t = { v = storage.n }
            -- Both read again right after the write (kept from here on).
            storage.log = (storage.log or "") .. (storage.n + storage.t.v) .. ","
            storage.a = { b = { c = 1 } }
            local node = storage.a.b
            storage.a.b = 5
            local before = storage.a.b
            local wrote = pcall(function() node.c = 2 end)
            storage.deep = { before = before, wrote = wrote, after = type(storage.a.b) }
          else
            -- btn2: the global binding has read k, then the btn2 binding
            -- writes it; the global one's next read must see that write.
            storage.n = 100
            storage.t.v = 100
            if storage.n + storage.t.v == 200 and storage.fail then error("rolled back") end
          end
        end
        function on_counter_changed(event)
          storage.fail = true
        end
    "#;
    let (mut k, mut host) = room(&[("main", src, &[("global", None), ("b2", Some("btn2"))])]);
    start(&mut k, &mut host);
    let press = |k: &mut Kernel, host: &mut LuaHost, id: &str| {
        k.process_json(&player("p1", "button.press", json!({"entityId": id})), host)
    };
    assert!(press(&mut k, &mut host, "btn").accepted());
    // btn2 twice: the first commits (no `fail` yet) and shows the global
    // binding read k before the btn2 binding wrote it; the second, with
    // `fail` set, is rolled back after reading n = 100.
    assert!(press(&mut k, &mut host, "btn2").accepted());
    assert!(press(&mut k, &mut host, "btn").accepted());
    assert!(k
        .process_json(
            &player(
                "p1",
                "counter.add",
                json!({"entityId": "score", "amount": 1})
            ),
            &mut host
        )
        .accepted());
    let out = press(&mut k, &mut host, "btn2");
    assert!(
        events(&out).iter().any(|(t, _)| t == "script.error"),
        "{:?}",
        events(&out)
    );
    assert!(press(&mut k, &mut host, "btn").accepted());
    let st = storage(&k, "main");
    // n: 1, then 100 (btn2), 101, then 102 after the rolled-back 100.
    assert_eq!(st["log"], json!("2,202,204,"), "{st}");
    assert_eq!(st["seen"], json!("nil,nil,second,second,"), "{st}");
    assert_eq!(st["n"], json!(102));
    let after = if st["a"]["b"].is_object() {
        "table"
    } else {
        "number"
    };
    assert_eq!(
        st["deep"],
        json!({"before": 5, "wrote": st["a"]["b"].is_object(), "after": after}),
        "{st}"
    );
    // Another state (a table restored with other storage), same host.
    let mut doc: Value = serde_json::from_str(&k.state().canonical_json()).expect("state JSON");
    doc["storage"]["main"]["n"] = json!(7);
    doc["storage"]["main"]["log"] = json!("");
    let restored = digipology_kernel::state_from_canonical(k.state(), &doc).expect("restores");
    let mut k = Kernel::new(restored);
    assert!(press(&mut k, &mut host, "btn").accepted());
    assert_eq!(storage(&k, "main")["log"], json!("16,"));
}

/// The match step reuses its last answers only while they cannot change:
/// functions that read nothing but storage are asked again once storage
/// changes; one that reads the table (`game.entity`) or prints is asked
/// after every action, storage changed or not (docs/match.md).
#[test]
fn the_match_step_is_asked_again_whenever_its_answers_could_change() {
    let (mut k, mut host) = global(
        r#"
        function participation(seat)
          if seat == "north" then return storage.turn == "north" and "acting" or "waiting" end
          if storage.loud then print("asked") end
          return game.entity("score").value > 0 and "acting" or "waiting"
        end
        function is_terminal() return storage.over == true end
        function on_button_pressed(event)
          if event.data.entityId == "btn" then storage.turn = "north" else storage.loud = true end
        end
    "#,
    );
    start(&mut k, &mut host);
    let seats = ["north".to_owned(), "south".to_owned()];
    let step = |k: &Kernel, host: &mut LuaHost| {
        let a = host
            .match_step(k.state(), (false, true), None, &seats)
            .expect("answers");
        (a.participation.expect("participation"), a.terminal)
    };
    let act = |k: &mut Kernel, host: &mut LuaHost, ty: &str, payload: Value| {
        assert!(k.process_json(&player("p1", ty, payload), host).accepted());
    };
    assert_eq!(
        step(&k, &mut host),
        (vec!["waiting", "waiting"], Some(false))
    );
    assert_eq!(
        step(&k, &mut host),
        (vec!["waiting", "waiting"], Some(false))
    );
    // The counter changes, storage does not: south reads the table.
    act(
        &mut k,
        &mut host,
        "counter.add",
        json!({"entityId": "score", "amount": 1}),
    );
    assert_eq!(
        step(&k, &mut host),
        (vec!["waiting", "acting"], Some(false))
    );
    // Storage changes: north reads it.
    act(
        &mut k,
        &mut host,
        "button.press",
        json!({"entityId": "btn"}),
    );
    assert_eq!(step(&k, &mut host), (vec!["acting", "acting"], Some(false)));
    // Printing is asked for every time.
    act(
        &mut k,
        &mut host,
        "button.press",
        json!({"entityId": "btn2"}),
    );
    let _ = host.take_log();
    step(&k, &mut host);
    step(&k, &mut host);
    assert_eq!(host.take_log().len(), 2, "south prints once per step");
}

/// A storage key that is neither a string nor an integer is refused at
/// the creator's line, read or written, at the top level or deeper, after
/// other keys of the same tables were read.
#[test]
fn a_storage_key_of_another_type_is_refused_at_the_creators_line() {
    for (access, what) in [
        ("local x = storage[true]", "boolean"),
        ("local x = storage.t[1.5]", "number"),
        ("local x = storage.t.u[{}]", "table"),
        ("storage.t[true] = 1", "boolean"),
        ("storage.t.u[2.5] = 1", "number"),
    ] {
        let src = format!(
            "function on_button_pressed(event)\n  storage.t = {{ u = {{ 1 }}, v = 2 }}\n  local warm = storage.t.v + storage.t.u[1]\n  {access}\nend\n"
        );
        let (_, _, err) = press_fails(&src, "runtime");
        assert!(
            err["message"].as_str().unwrap_or("").contains(&format!(
                "storage keys must be strings or integers, not {what}"
            )),
            "{access}: {err}"
        );
        assert_eq!(err["line"], json!(4), "{access}: {err}");
    }
}

/// A root or top-level storage node reads a key with one C function
/// (`raw.rs`), a deeper node in Lua: every kind of value reads back the
/// same at each depth — absent keys, booleans, integers and floats
/// (`math.type` kept), short and long strings, tables, list indexes, a
/// root's integer key — and a key of another type is still refused.
#[test]
fn storage_reads_answer_alike_at_every_depth() {
    let (_, _, st) = run(r#"
        local long = string.rep("ab", 100)
        local v = { b = true, f = false, i = 7, x = 2.5, big = 2^60, s = "seat", l = long,
                    list = { 10, "t", 1.5 } }
        for k, x in pairs(v) do storage[k] = x end
        storage.top = v
        storage.top.deep = v
        local function describe(node)
          local out = {}
          for _, k in ipairs({ "b", "f", "i", "x", "big", "s", "l", "absent" }) do
            local x = node[k]
            out[#out + 1] = type(x) .. ":" .. (math.type(x) or "") .. ":" .. tostring(x)
          end
          local list = node.list
          out[#out + 1] = tostring(list[1]) .. "," .. tostring(list[2]) .. "," .. tostring(list[3])
            .. "," .. tostring(list[4]) .. "," .. math.type(list[1])
          return table.concat(out, "|")
        end
        local root, top, deep = describe(storage), describe(storage.top), describe(storage.top.deep)
        storage.same = root == top and top == deep
        storage.seen = root
        storage.root_int = type(storage[3])
        storage.top_int = storage.list[2]
        storage.bad = select(2, pcall(function() return storage.top[false] end))
    "#);
    assert_eq!(st["same"], json!(true), "{st}");
    let long = "ab".repeat(100);
    assert_eq!(
        st["seen"],
        json!(format!(
            "boolean::true|boolean::false|number:integer:7|number:float:2.5|number:float:1.1529215046068e+18|string::seat|string::{long}|nil::nil|10,t,1.5,nil,integer"
        ))
    );
    assert_eq!(st["root_int"], json!("nil"));
    assert_eq!(st["top_int"], json!("t"));
    assert!(
        st["bad"]
            .as_str()
            .unwrap_or("")
            .ends_with("storage keys must be strings or integers, not boolean"),
        "{st}"
    );
}

/// A refused storage write reads the same whichever path writes it — the
/// C function of the root's and top-level tables (`raw.rs`) or the Lua
/// path of deeper ones: the same kind, message and line, whether the
/// write itself is refused (a list given a string key, a gap) or its key
/// or value is (an index below 1, NaN, an integer beyond 2^53).
#[test]
fn a_refused_storage_write_reads_the_same_at_every_depth() {
    for (table, write) in [
        ("{ 1, 2 }", ".k = 1"),
        ("{ k = 1 }", "[1] = 1"),
        ("{ 1 }", "[3] = 1"),
        ("{ 1 }", "[0] = 1"),
        ("{}", ".n = 0/0"),
        ("{}", ".b = math.maxinteger"),
    ] {
        let mut seen = Vec::new();
        for (setup, target) in [
            (format!("storage.x = {table}"), "storage.x"),
            (format!("storage.d = {{ x = {table} }}"), "storage.d.x"),
        ] {
            let src =
                format!("function on_button_pressed(event)\n  {setup}\n  {target}{write}\nend\n");
            let (_, _, err) = press_fails(&src, "runtime");
            assert_eq!(err["line"], json!(3), "{target}{write}: {err}");
            seen.push(err["message"].clone());
        }
        assert_eq!(seen[0], seen[1], "{table} {write}");
        assert!(
            seen[0]
                .as_str()
                .unwrap_or("")
                .starts_with("scripts/main.lua:3: "),
            "{seen:?}"
        );
    }
    // The root's own scalars, refused as before.
    for write in ["storage.n = 0/0", "storage.b = math.maxinteger"] {
        let src = format!("function on_button_pressed(event)\n  local x = 1\n  {write}\nend\n");
        let (_, _, err) = press_fails(&src, "runtime");
        assert_eq!(err["line"], json!(3), "{write}: {err}");
    }
}

/// A guard's storage write is refused at the guard's line, whichever
/// path takes it.
#[test]
fn a_guards_storage_write_is_refused_at_its_line() {
    for write in ["storage.x = 1", "storage.t.y = 2", "storage.t.u.z = 3"] {
        let src = format!(
            "function on_start(e) storage.t = {{ u = {{}} }} end\nfunction can_grab(player, piece)\n  {write}\n  return true\nend\n"
        );
        let (mut k, mut host) = global(&src);
        start(&mut k, &mut host);
        let out = k.process_json(
            &player("p1", "entity.grab", json!({"entityId": "card"})),
            &mut host,
        );
        let err = events(&out)
            .into_iter()
            .find(|(t, _)| t == "script.error")
            .map(|(_, d)| d)
            .unwrap_or_else(|| panic!("{write}: no script.error in {:?}", events(&out)));
        assert_eq!(err["kind"], json!("guard_mutation"), "{write}: {err}");
        assert_eq!(err["line"], json!(3), "{write}: {err}");
        assert!(
            err["message"]
                .as_str()
                .unwrap_or("")
                .starts_with("scripts/main.lua:3: guards are read-only"),
            "{write}: {err}"
        );
    }
}

/// The reads a guard makes most — `has_tag`, `seat_of`, `placement`,
/// `game.entity` — answer in C (`raw.rs`) whatever they are given: tags
/// and ids of every type, players as proxies, ids or nothing, every kind
/// of placement, entities that are gone.
#[test]
fn the_quick_reads_answer_every_argument() {
    let (_, _, st) = run(r#"
        local c = game.entity("card")
        storage.tags = { c:has_tag("red"), c:has_tag("blue"), c:has_tag(5), c:has_tag(nil), c:has_tag({}) }
        local actor = game.player(game.actor)
        storage.seats = tostring(game.seat_of(actor)) .. "," .. tostring(game.seat_of(game.actor))
          .. "," .. tostring(game.seat_of(nil)) .. "," .. tostring(game.seat_of(42))
          .. "," .. tostring(game.seat_of("nobody"))
        local function where(id)
          local p = game.entity(id).placement
          return p.kind .. ":" .. tostring(p.id)
        end
        game.entity("card"):attach_to(game.entity("slot"))
        game.create_stack("pile", { game.entity("s_a"), game.entity("s_b") })
        storage.places = { where("card2"), where("c1"), where("card"), where("s_a") }
        storage.lookups = { game.entity("nope") == nil, game.entity(5) == nil, game.entity({}) == nil,
          game.entity("deck") ~= nil }
        -- Handles that are not integers take the mlua natives' path: a
        -- float that is one converts, a table is refused as before.
        local h = rawget(c, 0)
        local has_tag = c.has_tag
        storage.odd = { has_tag({ [0] = h + 0.0, [1] = "card" }, "red"),
          (pcall(has_tag, { [0] = {}, [1] = "card" }, "red")) }
        local gone = game.entity("c2")
        gone:destroy()
        storage.gone = { pcall(function() return gone:has_tag("x") end) }
        storage.gone_place = { pcall(function() return gone.placement end) }
    "#);
    assert_eq!(st["tags"], json!([true, false, false, false, false]));
    // (No one is seated here: a seated player's seat is read in
    // `seats_come_in_seat_order_and_handlers_know_the_actor`.)
    assert_eq!(st["seats"], json!("nil,nil,nil,nil,nil"), "{st}");
    assert_eq!(
        st["places"],
        json!(["world:nil", "container:deck", "snap:slot", "stack:pile"]),
        "{st}"
    );
    assert_eq!(st["lookups"], json!([true, true, true, true]));
    assert_eq!(st["odd"], json!([true, false]), "{st}");
    assert_eq!(
        st["gone"],
        json!([false, "entity 'c2' no longer exists"]),
        "{st}"
    );
    assert_eq!(
        st["gone_place"],
        json!([false, "scripts/main.lua:27: entity 'c2' no longer exists"]),
        "{st}"
    );
}

/// Presses the buttons in turn for p1: each press of `accepted` commits,
/// every other press is refused (its handler fails).
fn press_in_turn(k: &mut Kernel, host: &mut LuaHost, buttons: [&str; 5], accepted: &str) {
    for button in buttons {
        let out = k.process_json(
            &player("p1", "button.press", json!({"entityId": button})),
            host,
        );
        assert_eq!(
            out.accepted(),
            button == accepted,
            "{button}: {:?}",
            events(&out)
        );
    }
}

/// The root's read cache of `storage` (raw.rs) never answers for storage
/// that changed outside the callbacks that keep it right: a handler that
/// read a key, wrote it and read it back (from the cache) and then failed
/// leaves the key as it was for the next action, and another script's
/// writes, in the same actions, reach neither script's answers.
#[test]
fn the_storage_read_cache_follows_rollbacks_and_other_scripts() {
    let main = r#"
function on_button_pressed(e)
  if e.data.entityId == "btn" then
    storage.x = storage.x + 1
    assert(storage.x == 6, "the write reads back")
    error("boom")
  end
  storage.x = storage.x or 5
  storage.seen = (storage.seen or "") .. storage.x .. ","
end
"#;
    let other = r#"
function on_button_pressed(e)
  storage.x = (storage.x or 100) + 1
  storage.seen = (storage.seen or "") .. storage.x .. ","
end
"#;
    let (mut k, mut host) = room(&[
        ("main", main, &[("global", None)]),
        ("other", other, &[("global", None)]),
    ]);
    start(&mut k, &mut host);
    press_in_turn(
        &mut k,
        &mut host,
        ["btn2", "btn", "btn2", "btn", "btn2"],
        "btn2",
    );
    assert_eq!(storage(&k, "main")["seen"], json!("5,5,5,"));
    assert_eq!(storage(&k, "main")["x"], json!(5));
    assert_eq!(storage(&k, "other")["seen"], json!("101,102,103,"));
}

/// The bindings of one script share its storage, and so the root's read
/// cache: a write through one binding is what the next binding reads (each
/// press runs both bindings' handlers; none of the increments is lost).
#[test]
fn a_scripts_bindings_read_each_others_storage_writes() {
    let main = r#"
function on_button_pressed(e)
  storage.n = (storage.n or 0) + 1
  storage.log = (storage.log or "") .. storage.n .. ","
end
"#;
    let (mut k, mut host) = room(&[("main", main, &[("g1", None), ("g2", None)])]);
    start(&mut k, &mut host);
    for _ in 0..3 {
        let out = k.process_json(
            &player("p1", "button.press", json!({"entityId": "btn"})),
            &mut host,
        );
        assert!(out.accepted(), "{:?}", events(&out));
    }
    assert_eq!(storage(&k, "main")["log"], json!("1,2,3,4,5,6,"));
}

/// A top-level table's node keeps a read cache as the root does: every
/// write — through the node, through the root (replacing, emptying or
/// dropping the table), of a table or a scalar, of more absent keys than
/// the cache remembers — reads back as written, and a write the action
/// then rolls back (the second button's press fails) is not read later.
#[test]
fn a_top_level_tables_read_cache_follows_every_write() {
    let main = r#"
function on_button_pressed(e)
  if e.data.entityId == "btn2" then
    local b = storage.b
    b.x = 99
    assert(b.x == 99 and storage.b.x == 99, "the write reads back")
    error("boom")
  end
  local n = (storage.n or 0) + 1
  storage.n = n
  if n > 1 then
    storage.seen = storage.seen .. "," .. tostring(storage.b.x)
    return
  end
  storage.b = { x = 1 }
  local b = storage.b
  for _ = 1, 2 do assert(b.x == 1 and b.y == nil, "read, then cached") end
  storage.b = { x = 2, y = 3 }
  assert(b.x == 2 and b.y == 3, "the root replaced the table")
  storage.b = 5
  assert(b.x == nil, "a number has no keys")
  storage.b = { x = 4 }
  assert(b.x == 4 and b.y == nil, "a table again")
  b.x = nil
  assert(b.x == nil and storage.b.x == nil, "removed")
  b.t = { 1 }
  assert(b.t[1] == 1, "a table at a key")
  b.t = 7
  assert(b.t == 7, "a scalar in its place")
  for i = 1, 100 do assert(b["k" .. i] == nil and storage["k" .. i] == nil, "absent") end
  for i = 1, 100 do b["k" .. i] = i storage["k" .. i] = -i end
  for i = 1, 100 do assert(b["k" .. i] == i and storage["k" .. i] == -i, "written") end
  for i = 1, 100 do b["k" .. i] = nil storage["k" .. i] = nil end
  for i = 1, 100 do assert(b["k" .. i] == nil and storage["k" .. i] == nil, "removed") end
  b.x = 4
  storage.seen = tostring(b.x)
end
"#;
    let (mut k, mut host) = global(main);
    start(&mut k, &mut host);
    press_in_turn(
        &mut k,
        &mut host,
        ["btn", "btn2", "btn", "btn2", "btn"],
        "btn",
    );
    assert_eq!(storage(&k, "main")["seen"], json!("4,4,4"));
}

/// A node a script keeps from one match to the next (in a table of its
/// own) reads and writes the new match's storage, and so does the node the
/// root keeps in the new match: the old node's read cache is retired when
/// the room starts another match (`LuaHost::forget_match`), and a write
/// through it empties the new node's.
#[test]
fn a_node_kept_from_an_earlier_match_reads_the_new_one() {
    let main = r#"
local held = {}
function on_button_pressed(e)
  if not held.b then
    storage.b = { x = 1 }
    held.b = storage.b
    assert(held.b.x == 1 and held.b.y == nil)
    storage.seen = "first"
    return
  end
  local old = held.b
  assert(old.x == nil, "the new match has no b yet")
  storage.b = { x = 2 }
  local new = storage.b
  assert(old.x == 2 and new.x == 2, "both read the new table")
  old.x = 3
  assert(new.x == 3, "a write through the old node reaches the new one")
  new.y = 4
  assert(old.y == 4, "and the other way")
  old.y = nil
  assert(new.y == nil, "a removal too")
  storage.seen = "second"
end
"#;
    let state = digipology_kernel::state_from_game(&game(), 5).expect("game");
    let (mut k, mut host) = global(main);
    start(&mut k, &mut host);
    let press = |k: &mut Kernel, host: &mut LuaHost| {
        let out = k.process_json(
            &player("p1", "button.press", json!({"entityId": "btn"})),
            host,
        );
        assert!(out.accepted(), "{:?}", events(&out));
    };
    press(&mut k, &mut host);
    assert_eq!(storage(&k, "main")["seen"], json!("first"));
    host.forget_match().expect("forgets");
    let mut k = Kernel::new(state);
    start(&mut k, &mut host);
    press(&mut k, &mut host);
    assert_eq!(storage(&k, "main")["seen"], json!("second"));
}

/// A write the runtime refuses (a string key in a list; a key of a table
/// that is gone) is not read back: the read caches take a written value
/// before the write and give it up when the write fails.
#[test]
fn a_refused_storage_write_is_not_read_back() {
    let (_, _, st) = run(r#"
        storage.l = { 1, 2 }
        local l = storage.l
        local wrote_l = pcall(function() l.x = "v" end)
        storage.b = { x = 1 }
        local b = storage.b
        storage.b = nil
        local wrote_b = pcall(function() b.x = "v" end)
        storage.seen = { wrote = wrote_l or wrote_b, lx = l.x == nil, bx = b.x == nil }
    "#);
    assert_eq!(st["seen"], json!({"wrote": false, "lx": true, "bx": true}));
}

/// docs/lua-api.md, Writes: `c:sort(less)` and `c:reorder(items)` put a
/// container's items in a new order through `container.reorder`; a list
/// that is not the container's items is a script error, and the action
/// rolls back whole.
#[test]
fn a_script_sorts_and_reorders_a_container() {
    let (k, _, _) = run(r#"
        game.entity("deck"):sort(function(a, b) return a.id > b.id end)
    "#);
    assert_eq!(
        component(&k, "deck", "container")["items"],
        json!(["c3", "c2", "c1"])
    );
    let (k, _, _) = run(r#"
        local d = game.entity("deck")
        d:reorder({ "c2", game.entity("c3"), "c1" })
    "#);
    assert_eq!(
        component(&k, "deck", "container")["items"],
        json!(["c2", "c3", "c1"])
    );
    let src = "function on_button_pressed(event)\n  game.entity(\"score\"):add(1)\n  game.entity(\"deck\"):reorder({ \"c1\", \"c1\", \"c2\" })\nend\n";
    let (mut k, mut host) = global(src);
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    let text = format!("{:?}", events(&out));
    assert!(
        text.contains("script.error") && text.contains("duplicate_item"),
        "{text}"
    );
    assert_eq!(
        component(&k, "score", "counter")["value"],
        json!(0),
        "rolled back"
    );
    assert_eq!(
        component(&k, "deck", "container")["items"],
        json!(["c1", "c2", "c3"])
    );
}
