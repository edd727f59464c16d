//! Once the instruction budget is spent, no Lua runs at all
//! (docs/lua-api.md, Sandbox guarantees): no `__close` method, no message
//! handler, no code after a `pcall` that caught the budget error, no
//! coroutine resumed, no comparator or replacement function called again.
//!
//! Every attack below keeps count of the Lua it ran after the budget was
//! spent (`hit()`, in a table the script keeps), ends as a `budget`
//! script error with the state unchanged, and then the room serves the
//! next press, which reads the count: it must be 0. Each attack runs on a
//! thread of its own so that a regression fails the test (after a
//! generous wait) instead of hanging the suite; nothing here compares
//! elapsed time.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::*;
use digipology_lua::Limits;
use serde_json::json;

/// How long an attack may take before the test calls it hung: far more
/// than a spent budget ever needs (a liveness check, not a measurement).
const HUNG: Duration = Duration::from_secs(300);

/// Runs `body` in a press handler, under a budget of `instructions`;
/// expects a `budget` error, then presses `btn2`, whose handler stores how
/// many times `hit()` ran, and returns that count.
fn hits_after(body: &str, instructions: u64) -> i64 {
    let src = format!(
        "local hits = {{ n = 0 }}\n\
         local function hit() hits.n = hits.n + 1 end\n\
         function on_button_pressed(event)\n\
           if event.data.entityId == 'btn2' then storage.hits = hits.n return end\n\
           game.entity('score'):add(1)\n\
           {body}\n\
         end\n"
    );
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let limits = Limits {
            instructions_max: instructions,
            ..Limits::default()
        };
        let (mut k, mut host) = room_with(&[("main", &src, &[("global", None)])], limits);
        start(&mut k, &mut host);
        let err = script_error(
            &mut k,
            &mut host,
            player("p1", "button.press", json!({"entityId": "btn"})),
            "budget",
        );
        assert!(
            host.memory_bytes() < limits.memory_bytes_max / 2,
            "the VM holds {} bytes after the attack",
            host.memory_bytes()
        );
        still_serving(&mut k, &mut host);
        assert_eq!(component(&k, "score", "counter")["value"], json!(0));
        let hits = storage(&k, "main")["hits"].as_i64().unwrap_or(-1);
        let _ = tx.send((err, hits));
    });
    match rx.recv_timeout(HUNG) {
        Ok((_, hits)) => hits,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the attack never ended:\n{body}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            panic!("the attack's checks failed (see the thread's panic above):\n{body}")
        }
    }
}

/// The attack the issue found: a to-be-closed variable whose `__close`
/// loops for ever, then an endless loop. Before the fix, unwinding the
/// budget error ran the `__close` method with the instruction hook off.
#[test]
fn a_looping_close_method_never_runs_after_the_budget() {
    let body =
        "local x <close> = setmetatable({}, {__close = function() hit() while true do end end})\n\
                while true do end";
    assert_eq!(hits_after(body, 1_000_000), 0);
    assert_eq!(hits_after(body, 10_000_000), 0);
}

#[test]
fn several_close_methods_and_nested_blocks_never_run() {
    let body =
        "local loop = setmetatable({}, {__close = function() hit() while true do end end})\n\
                local a <close> = loop\n\
                do local b <close> = loop\n\
                  local function deeper() local c <close> = loop while true do end end\n\
                  deeper()\n\
                end";
    assert_eq!(hits_after(body, 1_000_000), 0);
}

#[test]
fn a_close_method_in_a_coroutine_never_runs_after_the_budget() {
    let body = "coroutine.wrap(function()\n\
                  local x <close> = setmetatable({}, {__close = function() hit() while true do end end})\n\
                  while true do end\n\
                end)()";
    assert_eq!(hits_after(body, 1_000_000), 0);
}

#[test]
fn a_message_handler_never_runs_after_the_budget() {
    let body = "xpcall(function() while true do end end, function(e) hit() while true do end end)";
    assert_eq!(hits_after(body, 1_000_000), 0);
}

/// `pcall` returns to the script after catching the budget error: the
/// very next instruction stops it.
#[test]
fn nothing_runs_after_a_pcall_that_caught_the_budget() {
    assert_eq!(
        hits_after(
            "while true do pcall(function() while true do end end) hit() end",
            1_000_000
        ),
        0
    );
}

#[test]
fn a_coroutine_is_never_resumed_after_the_budget() {
    let body =
        "local co = coroutine.wrap(function() while true do hit() coroutine.yield() end end)\n\
                while true do pcall(function() while true do end end) co() end";
    assert_eq!(hits_after(body, 1_000_000), 0);
    let body = "local co = coroutine.wrap(function() while true do end end)\n\
                while true do pcall(co) hit() end";
    assert_eq!(hits_after(body, 1_000_000), 0);
}

#[test]
fn coroutine_close_never_runs_close_methods_after_the_budget() {
    let body = "local co = coroutine.create(function()\n\
                  local x <close> = setmetatable({}, {__close = function() hit() end})\n\
                  coroutine.yield()\n\
                end)\n\
                coroutine.resume(co)\n\
                pcall(function() while true do end end)\n\
                coroutine.close(co)";
    assert_eq!(hits_after(body, 1_000_000), 0);
}

#[test]
fn library_callbacks_are_not_called_again_after_the_budget() {
    let body = "pcall(string.gsub, ('x'):rep(1000), '.', function() while true do end end)\n\
                hit()";
    assert_eq!(hits_after(body, 1_000_000), 0);
    let body = "pcall(table.sort, {3, 2, 1, 5, 4}, function(a, b) while true do end end)\n\
                hit()";
    assert_eq!(hits_after(body, 1_000_000), 0);
}

#[test]
fn metamethods_never_run_after_the_budget() {
    let body = "local obj = setmetatable({}, {__index = function() hit() return 1 end,\n\
                  __tostring = function() hit() while true do end end})\n\
                local ok = pcall(function() while true do end end)\n\
                local v = obj.anything";
    assert_eq!(hits_after(body, 1_000_000), 0);
    // An error object with a looping __tostring: turning it into text is
    // metered like everything else, and never runs once the budget is out.
    let body =
        "local obj = setmetatable({}, {__tostring = function() hit() while true do end end})\n\
                local x <close> = setmetatable({}, {__close = function() error(obj) end})\n\
                while true do end";
    assert_eq!(hits_after(body, 1_000_000), 0);
}

/// A guard is read-only but runs Lua too: a looping `__close` there is
/// stopped the same way, and the press is refused as a script error.
#[test]
fn a_guard_with_a_looping_close_method_is_stopped() {
    let src = "function can_press(player, e)\n\
                 local x <close> = setmetatable({}, {__close = function() while true do end end})\n\
                 while true do end\n\
               end\n\
               function on_button_pressed(event) end\n";
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let limits = Limits {
            instructions_max: 1_000_000,
            ..Limits::default()
        };
        let (mut k, mut host) = room_with(&[("main", src, &[("global", None)])], limits);
        start(&mut k, &mut host);
        script_error(
            &mut k,
            &mut host,
            player("p1", "button.press", json!({"entityId": "btn"})),
            "budget",
        );
        let _ = tx.send(());
    });
    rx.recv_timeout(HUNG)
        .expect("the guard's attack ended (or its checks passed)");
}
