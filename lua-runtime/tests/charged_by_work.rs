//! Every library call is charged by its work (docs/lua-api.md, What work
//! costs): loop counts, bytes produced, values copied. Each attack below
//! repeats one call that used to do far more work than it was charged for
//! (the finding 2, and its neighbours), counting its rounds in a
//! table the script keeps; under a budget of `BUDGET` instructions the
//! rounds that fit must be few — as few as the call's charge says — and
//! the press must end as a `budget` error with the state unchanged and the
//! room serving. Counts, not clocks: a call charged nothing would run
//! millions of rounds (and, before the fix, for hours: each attack runs on
//! a thread of its own so a regression fails instead of hanging).

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::*;
use digipology_lua::Limits;
use serde_json::json;

const BUDGET: u64 = 10_000_000;

/// A liveness bound, far above what any attack takes when charged.
const HUNG: Duration = Duration::from_secs(300);

/// Runs `setup` once, then `body` in a loop that counts its rounds, under
/// `limits`; the press must fail as `kind`. Answers the rounds done.
fn rounds(setup: &str, body: &str, kind: &'static str, limits: Limits) -> i64 {
    let src = format!(
        "local rounds = {{ n = 0 }}\n\
         local big = {{}} for i = 1, 100000 do big[i] = i end\n\
         {setup}\n\
         function on_button_pressed(e)\n\
           if e.data.entityId == 'btn2' then\n\
             if release then release() end\n\
             storage.rounds = rounds.n return\n\
           end\n\
           game.entity('score'):add(1)\n\
           while true do rounds.n = rounds.n + 1\n{body}\n end\n\
         end\n"
    );
    let body = body.to_owned();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut k, mut host) = room_with(&[("main", &src, &[("global", None)])], limits);
        start(&mut k, &mut host);
        script_error(
            &mut k,
            &mut host,
            player("p1", "button.press", json!({"entityId": "btn"})),
            kind,
        );
        assert!(host.memory_bytes() < limits.memory_bytes_max, "memory held");
        still_serving(&mut k, &mut host);
        assert_eq!(component(&k, "score", "counter")["value"], json!(0));
        let n = storage(&k, "main")["rounds"].as_i64().unwrap_or(-1);
        let _ = tx.send(n);
    });
    match rx.recv_timeout(HUNG) {
        Ok(n) => n,
        Err(_) => panic!("the attack never ended, or its checks failed:\n{body}"),
    }
}

fn budget(body: &str) -> i64 {
    budget_with("", body)
}

/// [`budget`] after `setup`.
fn budget_with(setup: &str, body: &str) -> i64 {
    rounds(
        setup,
        body,
        "budget",
        Limits {
            instructions_max: BUDGET,
            ..Limits::default()
        },
    )
}

/// At most the rounds a budget pays for at `charge` instructions a round
/// (plus one: the round the budget ran out in).
fn at_most(charge: u64) -> i64 {
    i64::try_from(BUDGET / charge + 1).unwrap_or(i64::MAX)
}

#[test]
fn string_rep_is_charged_per_copy_even_of_nothing() {
    // rep('', n) looped n times and was charged for the 0 bytes it built.
    for body in [
        "string.rep('', 1000000)",
        "string.rep('', 1000000, '')",
        "('x'):rep(0) string.rep('', 1000000)",
    ] {
        let n = budget(body);
        assert!(n <= at_most(400_000), "{body}: {n} rounds");
    }
}

#[test]
fn copying_values_is_charged_per_value() {
    // Each round copies the 100,000 values of `...` (or of the table).
    for (setup, body) in [
        (
            "",
            "local function f(...) select('#', ...) end f(table.unpack(big))",
        ),
        ("", "local t = {table.unpack(big)}"),
        ("", "table.pack(table.unpack(big))"),
    ] {
        let n = budget(&format!("{setup}{body}"));
        assert!(n <= at_most(50_000), "{body}: {n} rounds");
    }
    // The same `...` copied again and again inside one call.
    for inner in [
        "select('#', ...)",
        "local t = {...}",
        "table.pack(...)",
        "select(2, ...)",
    ] {
        let body = format!(
            "local function f(...) while true do rounds.n = rounds.n + 1 {inner} end end f(table.unpack(big))"
        );
        let n = budget(&body);
        assert!(n <= at_most(40_000), "{inner}: {n} rounds");
    }
}

#[test]
fn numbers_and_text_are_charged_by_their_digits() {
    let digits = "local digits = string.rep('7', 199)\n\
                  local floats = {} for i = 1, 1000 do floats[i] = i + 0.123456789 end";
    for (body, charge) in [
        ("tonumber(digits)", 100),
        ("local n = digits + 0", 100),
        ("tonumber(digits, 36)", 90),
        ("table.concat(floats, ',')", 60_000),
        ("string.format('%.99f', 1e308)", 1_000),
        ("tostring(1.5)", 60),
    ] {
        let n = budget_with(digits, body);
        assert!(n <= at_most(charge), "{body}: {n} rounds");
    }
}

#[test]
fn tables_that_rehash_at_every_insert_are_charged_for_it() {
    // A full table where a key goes and a colliding one comes rehashes on
    // every insert: each is charged for the table's size.
    let setup = "local t = {} for i = 1, 2^17 do t[i * 2^17] = true end";
    let body = "t[rounds.n * 2^17] = nil t[rounds.n * 2^17 + 2^34] = true";
    let n = budget_with(setup, body);
    assert!(n <= at_most(20_000), "{n} rounds");
}

#[test]
fn collections_at_the_memory_ceiling_are_charged_for_the_heap() {
    // Live memory at the ceiling (but for a little room): every allocation
    // that does not fit is a full collection of the whole heap (hundreds of
    // thousands of objects) before the memory error a script may catch.
    let setup = "local keep\nfunction release() keep = nil end";
    let fill = "if not keep then keep = {}\n\
                  pcall(function() local i = 0 while true do i = i + 1 keep[i] = {} end end)\n\
                  for j = 1, 5000 do keep[#keep] = nil end\n\
                end\n\
                pcall(string.rep, 'x', 1 << 20)";
    let n = rounds(
        setup,
        fill,
        "budget",
        Limits {
            instructions_max: BUDGET,
            memory_bytes_max: 16 << 20,
            ..Limits::default()
        },
    );
    // Each collection walks some 200,000 objects, four instructions each.
    assert!(n <= at_most(400_000), "{n} rounds");
}

#[test]
fn reads_of_the_game_are_charged_by_what_they_build() {
    for (body, charge) in [
        ("local l = game.entities()", 18 * 16),
        ("local p = game.entity('card').props", 32),
        ("local t = game.entity('card').tags", 32),
        ("local items = game.entity('deck'):items()", 3 * 24),
        ("local s = game.settings", 3 * 32),
    ] {
        let n = budget(body);
        assert!(n <= at_most(charge), "{body}: {n} rounds");
    }
}

#[test]
fn subcommands_are_charged_for_the_kernel_work() {
    // A flip a round: a subcommand is charged its price (and the rounds
    // stop at the cascade bound, a `budget` error too, if that comes
    // first).
    let n = budget("game.entity('card'):flip()");
    assert!(n <= at_most(100).max(10_001), "{n} rounds");
    let n = rounds(
        "",
        "game.entity('card'):flip()",
        "budget",
        Limits {
            instructions_max: 500_000,
            ..Limits::default()
        },
    );
    assert!(n <= 500_000 / 100 + 1, "{n} rounds under a small budget");
}

#[test]
fn printing_copies_only_what_it_keeps_and_is_charged_for_the_rest() {
    let n = budget_with("local s = string.rep('x', 10000000)", "print(s)");
    // Ten megabytes a line: charged at least a megabyte's worth a round.
    assert!(n <= at_most(1_000_000), "{n} rounds");
}

#[test]
fn a_module_that_requires_itself_is_a_clear_error() {
    let spec = |id: &str, file: &str, src: &str| digipology_lua::ScriptSpec {
        id: id.into(),
        file: file.into(),
        source: src.into(),
        bindings: vec![digipology_lua::BindingSpec {
            id: "global".into(),
            entity: None,
        }],
    };
    let mut modules = digipology_lua::Modules::new();
    modules.insert(
        "loop".into(),
        (
            "scripts/loop.lua".into(),
            "require('loop')\nreturn {}\n".into(),
        ),
    );
    modules.insert(
        "ping".into(),
        (
            "scripts/ping.lua".into(),
            "require('pong')\nreturn {}\n".into(),
        ),
    );
    modules.insert(
        "pong".into(),
        (
            "scripts/pong.lua".into(),
            "require('ping')\nreturn {}\n".into(),
        ),
    );
    let state = digipology_kernel::state_from_game(&game(), 5).expect("game");
    for name in ["loop", "ping"] {
        let src = format!(
            "function on_button_pressed(e) if e.data.entityId == 'btn' then require('{name}') end end\n"
        );
        let host = digipology_lua::LuaHost::new(
            &[spec("main", "scripts/main.lua", &src)],
            modules.clone(),
            &state,
            Limits::default(),
        )
        .expect("loads");
        let mut k = digipology_kernel::Kernel::new(state.clone());
        let mut host = host;
        start(&mut k, &mut host);
        let err = script_error(
            &mut k,
            &mut host,
            player("p1", "button.press", json!({"entityId": "btn"})),
            "runtime",
        );
        assert!(
            err["message"]
                .as_str()
                .unwrap_or("")
                .contains("requires itself"),
            "{name}: {err}"
        );
        still_serving(&mut k, &mut host);
    }
}

#[test]
fn long_strings_compared_are_charged_by_their_bytes() {
    // Two equal megabyte strings that are different objects: every
    // comparison reads both to the end — `==`, `rawequal` and a table
    // lookup alike (the last two with no state at hand: what they owe
    // brings the budget's check to the next instruction). A string of
    // '\0's is a megabyte of one-byte segments for `<`.
    let setup = "local a = string.rep('x', 1 << 20)\n\
                 local b = string.rep('x', 1 << 20)\n\
                 local keyed = {[a] = true}\n\
                 local z1, z2 = string.rep('\\0', 1 << 20), string.rep('\\0', 1 << 20)";
    for (body, charge) in [
        ("local _ = (a == b)", 10_000),
        ("local _ = rawequal(a, b)", 10_000),
        ("local _ = keyed[b]", 10_000),
        ("local _ = z1 < z2", 1_000_000),
        ("local _ = z1 <= z2", 1_000_000),
    ] {
        let n = budget_with(setup, body);
        assert!(n <= at_most(charge), "{body}: {n} rounds");
    }
}

#[test]
fn text_handed_to_the_host_is_charged_by_its_bytes() {
    // A megabyte of text a round, written where the host copies it.
    let setup = "local s = string.rep('x', 1 << 20)";
    for body in [
        "storage.x = s",
        "storage.t = {s}",
        // Refused (text holds at most 4 kB), after the host read it.
        "pcall(function() game.entity('sign'):set_text(s) end)",
    ] {
        let n = budget_with(setup, body);
        assert!(n <= at_most(60_000), "{body}: {n} rounds");
    }
}

#[test]
fn a_refused_storage_write_is_charged_for_what_it_would_replace() {
    // A big table in storage, then writes of it that are refused (a
    // function has no stored form) but measure what they would replace.
    let body = "if not storage.big then\n\
                  local t = {} for i = 1, 200000 do t[i] = i end storage.big = t\n\
                end\n\
                pcall(function() storage.big = print end)";
    let n = rounds(
        "",
        body,
        "budget",
        Limits {
            instructions_max: 50_000_000,
            ..Limits::default()
        },
    );
    // Each refused write walks 200,000 values, two instructions each.
    assert!(n <= 50_000_000 / 400_000 + 1, "{n} rounds");
}
