//! Where an action's instruction budget runs out depends on the action,
//! not on what ran before it in the same room without being recorded: a
//! seat's view, a dry run, a question the room asked live but not in a
//! replay, or another Lua VM built on the same state (a resumed save, a
//! recovered server room). Each test finds the longest `for i = 1, n do end`
//! a button press fits in a budget of 100,000 instructions, with and
//! without the call before it, by bisection. (The count hook starts afresh
//! for every budget; the runtime's own bookkeeping — storage nodes kept
//! between calls, guard proxies — costs the budget nothing, and the storage
//! natives charge a fixed cost instead.) Found by review; docs/formats.md
//! (the record and replay) names what still moves an edge.

mod common;

use common::*;
use digipology_kernel::{Action, Kernel, Source, Value};
use digipology_lua::{BindingSpec, Limits, LuaHost, Modules, ScriptSpec};
use serde_json::json;

#[derive(Clone, Copy)]
enum Before {
    Nothing,
    View,
    DryRun,
    /// The match step, with `is_terminal` asked (a live room) or not.
    Step(bool),
}

fn press() -> serde_json::Value {
    player("p1", "button.press", json!({"entityId": "btn"}))
}

fn host_on(state: &digipology_kernel::State, src: &str) -> LuaHost {
    let spec = ScriptSpec {
        id: "main".into(),
        file: "scripts/main.lua".into(),
        source: src.into(),
        bindings: vec![BindingSpec {
            id: "g".into(),
            entity: None,
        }],
    };
    let limits = Limits {
        instructions_max: 100_000,
        ..Limits::default()
    };
    LuaHost::new(&[spec], Modules::new(), state, limits).expect("loads")
}

fn build(src: &str) -> (Kernel, LuaHost) {
    let state = digipology_kernel::state_from_game(&game(), 5).expect("game");
    let host = host_on(&state, src);
    (Kernel::new(state), host)
}

/// The longest loop (`{N}` in `template`) the press fits after `before`.
fn longest(template: &str, before: Before) -> u64 {
    let (mut lo, mut hi) = (0u64, 200_000u64);
    while lo + 1 < hi {
        let n = (lo + hi) / 2;
        let (mut k, mut host) = build(&template.replace("{N}", &n.to_string()));
        start(&mut k, &mut host);
        match before {
            Before::Nothing => {}
            Before::View => {
                let a = host.query(k.state(), "observe", &[Value::from("north")]);
                assert!(matches!(a, Some(Ok(_))), "{a:?}");
            }
            Before::Step(asked) => {
                let seats = ["north".to_owned(), "south".to_owned()];
                assert!(host
                    .match_step(k.state(), (false, asked), None, &seats)
                    .is_some());
            }
            Before::DryRun => {
                let source = Source::Player {
                    player_id: "p1".into(),
                };
                let action = Action::new("button.press", source, json!({"entityId": "btn"}));
                // Runs the guard and the handler, then rolls back (its own
                // budget may run out: what it leaves behind is the point).
                let _ = k.dry_run(&action, &mut host);
            }
        }
        if k.process_json(&press(), &mut host).accepted() {
            lo = n;
        } else {
            hi = n;
        }
    }
    assert!(lo > 10_000, "the press fits some loop: {lo}");
    lo
}

/// A view that keeps nothing behind: the count hook starts afresh for the
/// action (it used to go on from where the view left it).
#[test]
fn a_view_before_an_action_moves_no_edge() {
    let src =
        "function observe(seat) for i = 1, 777 do local _ = storage['k' .. i] end return 1 end\n\
               function on_button_pressed(e) for i = 1, {N} do end storage.done = true end\n";
    assert_eq!(longest(src, Before::View), longest(src, Before::Nothing));
}

/// A view that reads `storage.board` first leaves its node kept.
#[test]
fn a_view_that_read_a_storage_table_first_moves_no_edge() {
    let src = "function on_start(e) storage.board = { a = 1 } end\n\
               function observe(seat) return storage.board.a end\n\
               function on_button_pressed(e) local _ = storage.board.a for i = 1, {N} do end storage.done = true end\n";
    assert_eq!(longest(src, Before::View), longest(src, Before::Nothing));
}

/// A dry run's guard leaves the guard's proxies made.
#[test]
fn a_dry_run_that_made_the_guards_proxies_moves_no_edge() {
    let src = "function can_press(p, e) return p.id == 'p1' and e.id == 'btn' end\n\
               function on_button_pressed(e) for i = 1, {N} do end storage.done = true end\n";
    assert_eq!(longest(src, Before::DryRun), longest(src, Before::Nothing));
}

/// A live room asks `is_terminal` after an action; its replay does not.
#[test]
fn a_question_asked_live_only_moves_no_edge() {
    let src = "function on_start(e) storage.board = { a = 1 } end\n\
               function is_terminal() return storage.board.a == 2 end\n\
               function on_button_pressed(e) local _ = storage.board.a for i = 1, {N} do end storage.done = true end\n";
    assert_eq!(
        longest(src, Before::Step(true)),
        longest(src, Before::Step(false))
    );
}

/// A new VM on the same state (a resumed save, a recovered room) fits the
/// same second press as the VM that ran the first.
#[test]
fn a_fresh_vm_fits_what_the_running_one_fits() {
    let edge = |fresh: bool| {
        let (mut lo, mut hi) = (0u64, 200_000u64);
        while lo + 1 < hi {
            let n = (lo + hi) / 2;
            let src = format!(
                "function on_start(e) storage.board = {{ a = 1 }} end\n\
                 function on_button_pressed(e) local _ = storage.board.a if storage.once then for i = 1, {n} do end end storage.once = true end\n"
            );
            let (mut k, mut host) = build(&src);
            start(&mut k, &mut host);
            assert!(k.process_json(&press(), &mut host).accepted());
            if fresh {
                host = host_on(k.state(), &src);
            }
            if k.process_json(&press(), &mut host).accepted() {
                lo = n;
            } else {
                hi = n;
            }
        }
        lo
    };
    assert_eq!(edge(true), edge(false));
}

/// A coroutine made at load still runs out of budget after the hook was
/// set again for views and actions.
#[test]
fn a_coroutine_made_before_is_still_metered() {
    let (mut k, mut host) = build(
        "local co = coroutine.wrap(function() while true do end end)\n\
         function observe(seat) return 1 end\n\
         function on_button_pressed(e) co() end\n",
    );
    start(&mut k, &mut host);
    for _ in 0..3 {
        assert!(host
            .query(k.state(), "observe", &[Value::from("north")])
            .is_some());
    }
    let out = k.process_json(&press(), &mut host);
    let ev = events(&out);
    assert!(!out.accepted(), "{ev:?}");
    assert!(
        ev.iter()
            .any(|(t, d)| t == "script.error" && d["kind"] == json!("budget")),
        "{ev:?}"
    );
}

/// The function that marks the runtime's bookkeeping as free of budget is
/// not reachable by scripts.
#[test]
fn scripts_cannot_mark_their_own_functions_free() {
    let (mut k, mut host) = build(
        "function on_button_pressed(e) storage.seen = (__digi_uncounted ~= nil) or (_G.__digi_uncounted ~= nil) end\n",
    );
    start(&mut k, &mut host);
    assert!(k.process_json(&press(), &mut host).accepted());
    assert_eq!(storage(&k, "main")["seen"], json!(false));
}

/// Presses `button` for p1; whether it was accepted.
fn press_button(k: &mut Kernel, host: &mut LuaHost, button: &str) -> bool {
    k.process_json(
        &player("p1", "button.press", json!({"entityId": button})),
        host,
    )
    .accepted()
}

/// A room whose first press stores two 5 MB strings (at the root and in a
/// top-level table) and whose second press builds a 16 MB table, with
/// `observe` as given: the second press must fit in 24 MiB, and end the
/// same, whether or not a seat's view ran between the two presses.
fn a_view_leaves_the_next_press_alone(observe: &str) {
    let main = format!(
        "function observe(seat) {observe} end
function on_button_pressed(e)
  if not storage.b then
    storage.s = string.rep('y', 5000000)
    storage.b = {{ s = string.rep('x', 5000000) }}
    return
  end
  local t = {{}}
  for i = 1, 600000 do t[i] = true end
  storage.len = #t
end"
    );
    let limits = Limits {
        memory_bytes_max: 24 * 1024 * 1024,
        ..Limits::default()
    };
    let run = |view: bool| {
        let (mut k, mut host) = room_with(&[("main", &main, &[("global", None)])], limits);
        start(&mut k, &mut host);
        assert!(press_button(&mut k, &mut host, "btn"));
        if view {
            let seen = host.view(k.state(), Some("north"));
            assert!(matches!(seen, Some(Ok(_))), "{seen:?}");
        }
        (press_button(&mut k, &mut host, "btn"), k.state_hash())
    };
    let plain = run(false);
    assert!(plain.0, "the second press fits without a view");
    assert_eq!(run(true), plain, "and after one");
}

/// A view that reads a long string from a top-level table leaves nothing
/// alive for the next action's memory: the read caches keep no long
/// string (found by review: a 10 MB string kept by a cache after a view
/// made the next action run out of 24 MiB; without the view it fit).
#[test]
fn a_view_keeps_no_long_string_alive_for_the_next_action() {
    a_view_leaves_the_next_press_alone("return #storage.b.s + #storage.s");
}

/// The node of a top-level table past the 64 the root keeps is made afresh
/// for every read, whatever ran before (found by review: the root's cache
/// kept it, and a dry run's write emptied the cache, so whether two reads
/// gave the same node depended on the dry run).
#[test]
fn a_dry_run_decides_nothing_about_a_nodes_identity() {
    let main = "local held
function on_button_pressed(e)
  if e.data.entityId == 'btn2' then storage.dry = 1 return end
  if not held then
    for i = 1, 70 do storage['t' .. i] = { c = i } local _ = storage['t' .. i] end
    held = { kept = storage.t1, late = storage.t70 }
    return
  end
  storage.same = { kept = rawequal(storage.t1, held.kept), late = rawequal(storage.t70, held.late) }
end";
    let run = |dry: bool| {
        let (mut k, mut host) = global(main);
        start(&mut k, &mut host);
        assert!(press_button(&mut k, &mut host, "btn"));
        if dry {
            let source = Source::Player {
                player_id: "p1".into(),
            };
            let action = Action::new("button.press", source, json!({"entityId": "btn2"}));
            assert!(k.dry_run(&action, &mut host).accepted());
        }
        assert!(press_button(&mut k, &mut host, "btn"));
        (storage(&k, "main")["same"].clone(), k.state_hash())
    };
    let plain = run(false);
    assert_eq!(plain.0, json!({"kept": true, "late": false}));
    assert_eq!(run(true), plain);
}

/// Nor does a view that reads long absent keys: the read caches keep no
/// long key either (found by a second review: a 5 MB absent key read by a
/// view stayed in a cache and made the next action run out of 24 MiB).
#[test]
fn a_view_keeps_no_long_key_alive_for_the_next_action() {
    a_view_leaves_the_next_press_alone(
        "return (storage[storage.s] or 0) + (storage.b[storage.b.s] or 0)",
    );
}
