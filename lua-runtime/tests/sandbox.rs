//! The hostile-script suite: each script attacks the room from a button
//! handler; every test ends with the state unchanged and the room still
//! serving the next action.

mod common;

use common::*;
use digipology_lua::Limits;
use serde_json::json;

/// Runs `body` as the handler of a press on `btn`, expects a script error of
/// `kind`, then checks the room still serves. Returns the script.error data.
fn attack(body: &str, kind: &str) -> serde_json::Value {
    attack_with(body, kind, Limits::default())
}

/// Runs `src` (a global script) through one press of `btn`, which must be
/// accepted, and returns the script's storage.
fn press_and_read(src: &str) -> serde_json::Value {
    let (mut k, mut host) = global(src);
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
    storage(&k, "main")
}

/// As [`attack`], and the error's message contains `needle`.
fn attack_says(body: &str, kind: &str, needle: &str) {
    let err = attack(body, kind);
    assert!(
        err["message"].as_str().unwrap_or("").contains(needle),
        "{body}: {err}"
    );
}

fn attack_with(body: &str, kind: &str, limits: Limits) -> serde_json::Value {
    let src = format!(
        "function on_button_pressed(event)\n  if event.data.entityId ~= 'btn' then return end\n  game.entity('score'):add(1)\n{body}\nend\n"
    );
    let (mut k, mut host) = room_with(&[("main", &src, &[("global", None)])], limits);
    start(&mut k, &mut host);
    let err = script_error(
        &mut k,
        &mut host,
        player("p1", "button.press", json!({"entityId": "btn"})),
        kind,
    );
    // The attack is bounded by counts, not by a clock: it ended within the
    // instruction budget and the memory ceiling (the error kind says which
    // one stopped it), and the room got its memory back afterwards.
    assert!(
        host.memory_bytes() < limits.memory_bytes_max / 2,
        "the VM still holds {} bytes after the attack (ceiling {})",
        host.memory_bytes(),
        limits.memory_bytes_max
    );
    still_serving(&mut k, &mut host);
    assert_eq!(component(&k, "score", "counter")["value"], json!(0));
    err
}

#[test]
fn an_endless_loop_hits_the_instruction_budget() {
    attack("while true do end", "budget");
}

#[test]
fn a_memory_bomb_hits_the_memory_ceiling() {
    attack_says(
        "local t = {} local s = ('x'):rep(1000) for i = 1, 1e9 do t[i] = s .. i end",
        "memory",
        "memoryBytesMax",
    );
    // Each read of a long string from storage that no read cache keeps (a
    // list's item, a key deeper down) makes a new Lua string: the memory
    // error raised inside the read names the setting too.
    attack_says(
        "storage.s = ('x'):rep(4000) storage.t = { u = { s = storage.s } } storage.l = { storage.s } local t = {} for i = 1, 1e9 do t[#t + 1] = storage.l[1] t[#t + 1] = storage.t.u.s end",
        "memory",
        "memoryBytesMax",
    );
}

#[test]
fn string_rep_of_two_to_the_forty_fails_at_once() {
    // 2^40 bytes is more than a string may hold: refused before anything
    // is built. rep is charged for its copies before it builds anything:
    // a size the budget covers runs into the memory ceiling instead.
    attack_says("local s = ('x'):rep(2^40)", "runtime", "too large");
    let (mut k, mut host) = room_with(
        &[(
            "main",
            "function on_button_pressed(event)
  if event.data.entityId ~= 'btn' then return end
  game.entity('score'):add(1)
  local s = ('x'):rep(2^30)
end
",
            &[("global", None)],
        )],
        Limits {
            instructions_max: 1_000_000_000,
            ..Limits::default()
        },
    );
    start(&mut k, &mut host);
    script_error(
        &mut k,
        &mut host,
        player("p1", "button.press", json!({"entityId": "btn"})),
        "memory",
    );
}

#[test]
fn runaway_recursion_is_a_runtime_error() {
    attack_says(
        "local function f(n) return f(n + 1) + 1 end f(1)",
        "runtime",
        "stack overflow",
    );
}

#[test]
fn binary_chunks_cannot_be_loaded() {
    attack_says("local f = load('\\27Lua\\84\\0') f()", "sandbox", "binary");
}

#[test]
fn string_dump_is_unavailable_even_through_the_string_metatable() {
    attack("local d = string.dump(function() end)", "sandbox");
    attack("local d = ('').dump(function() end)", "sandbox");
}

#[test]
fn one_script_cannot_poison_string_for_another() {
    let poisoner = r#"
        function on_button_pressed(event)
          pcall(function() string.format = function() return "pwned" end end)
          pcall(function() getmetatable('').__index.upper = function() return "pwned" end end)
          pcall(function() local mt = getmetatable('') mt.__add = function() return 1 end end)
        end
    "#;
    let victim = r#"
        function on_button_pressed(event)
          local ok = string.format("%d", 7) == "7" and ("abc"):upper() == "ABC"
          if not ok then error("string was poisoned") end
          game.entity("sign"):set_text(string.format("%s-%s", "ok", ("x"):upper()))
        end
    "#;
    let (mut k, mut host) = room(&[
        ("a", poisoner, &[("global", None)]),
        ("b", victim, &[("global", None)]),
    ]);
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
    assert_eq!(component(&k, "sign", "text"), json!({"value": "ok-X"}));
    // The string metatable is hidden from every script.
    let (mut k, mut host) = global("function on_button_pressed() assert(getmetatable('') == false) game.entity('score'):add(1) end");
    start(&mut k, &mut host);
    assert!(k
        .process_json(
            &player("p1", "button.press", json!({"entityId": "btn"})),
            &mut host
        )
        .accepted());
}

#[test]
fn assigning_a_library_function_is_refused() {
    attack("string.format = function() end", "sandbox");
}

#[test]
fn gc_finalizers_are_refused() {
    attack(
        "setmetatable({}, {__gc = function() while true do end end})",
        "sandbox",
    );
    attack(
        "local mt = {} setmetatable({}, mt) mt.__gc = function() end",
        "sandbox",
    );
    attack("setmetatable({}, {__mode = 'k'})", "sandbox");
    attack(
        "local mt = {} setmetatable({}, mt) rawset(mt, '__mode', 'k')",
        "sandbox",
    );
}

#[test]
fn an_error_object_whose_tostring_errors_is_reported_safely() {
    let err = attack(
        "error(setmetatable({}, {__tostring = function() error('nested') end}))",
        "runtime",
    );
    let msg = err["message"].as_str().unwrap_or("");
    assert!(!msg.contains("0x"), "{msg}");
}

#[test]
fn a_huge_tostring_is_truncated() {
    let err = attack(
        "error(setmetatable({}, {__tostring = function() return ('y'):rep(1e7) end}))",
        "runtime",
    );
    assert!(
        err["message"].as_str().unwrap_or("").len() < 4096,
        "message not truncated"
    );
}

#[test]
fn error_with_a_table_does_not_leak_an_address() {
    let err = attack("error({})", "runtime");
    let msg = err["message"].as_str().unwrap_or("");
    assert!(!msg.contains("0x") && msg.contains("table"), "{msg}");
}

#[test]
fn addresses_do_not_leak_through_tostring_or_format() {
    let (mut k, mut host) = global(
        r#"
        function on_button_pressed(event)
          local s = tostring({}) .. tostring(print) .. string.format("%s", {}) .. tostring(coroutine.create(function() end))
          game.entity("sign"):set_text(s)
        end
    "#,
    );
    start(&mut k, &mut host);
    assert!(k
        .process_json(
            &player("p1", "button.press", json!({"entityId": "btn"})),
            &mut host
        )
        .accepted());
    let text = component(&k, "sign", "text")["value"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(!text.contains("0x") && !text.contains(':'), "{text}");
    attack("local s = string.format('%p', {})", "sandbox");
}

#[test]
fn a_handler_that_triggers_itself_forever_is_bounded() {
    let (mut k, mut host, err) = press_fails(
        r#"
        function on_counter_changed(event)
          game.entity("score"):add(1)
        end
        function on_button_pressed(event)
          if event.data.entityId == "btn" then game.entity("score"):add(1) end
        end
    "#,
        "budget",
    );
    assert!(
        err["message"].as_str().unwrap_or("").contains("cascade"),
        "{err}"
    );
    still_serving(&mut k, &mut host);
}

#[test]
fn a_million_subcommands_in_one_transaction_are_stopped() {
    attack(
        "for i = 1, 1000000 do game.entity('other'):add(1) end",
        "budget",
    );
}

#[test]
fn io_os_debug_and_package_are_absent() {
    attack("io.write('x')", "sandbox");
    attack("os.exit(1)", "sandbox");
    attack("debug.sethook()", "sandbox");
    attack("local p = package.loaded", "sandbox");
    attack("require 'os'", "sandbox");
    attack("dofile('/etc/passwd')", "sandbox");
    attack("collectgarbage()", "sandbox");
}

#[test]
fn a_budget_loop_hidden_in_a_coroutine_is_caught() {
    attack(
        "coroutine.wrap(function() while true do end end)()",
        "budget",
    );
}

#[test]
fn pcall_cannot_swallow_the_budget() {
    attack(
        "while true do pcall(function() while true do end end) end",
        "budget",
    );
}

#[test]
fn xpcall_and_resume_cannot_swallow_the_budget_either() {
    attack(
        "while true do xpcall(function() while true do end end, function(e) return e end) end",
        "budget",
    );
    attack(
        "while true do coroutine.resume(coroutine.create(function() while true do end end)) end",
        "budget",
    );
}

#[test]
fn a_million_tiny_coroutines_are_charged() {
    attack(
        "for i = 1, 1e6 do coroutine.wrap(function() end)() end",
        "budget",
    );
}

#[test]
fn a_backtracking_pattern_does_not_hold_the_room() {
    attack_says(
        "string.find(('a'):rep(400), ('.-'):rep(3) .. 'b')",
        "budget",
        "pattern",
    );
    attack(
        "local s = ('a'):rep(400) s:match(('.-'):rep(3) .. 'b')",
        "budget",
    );
    attack(
        "for w in (('a'):rep(400)):gmatch(('.-'):rep(3) .. 'b') do end",
        "budget",
    );
    attack(
        "local r = (('a'):rep(400)):gsub(('.-'):rep(3) .. 'b', '')",
        "budget",
    );
}

#[test]
fn ordinary_patterns_still_work() {
    let (mut k, mut host) = global(
        r#"
        function on_button_pressed(event)
          local s = ("key=value; other=thing "):rep(100)
          local n = 0
          for a, b in s:gmatch("(%w+)=(%w+)") do n = n + 1 end
          local trimmed = (("  padded  "):gsub("^%s+", ""):gsub("%s+$", ""))
          local found = s:find("other=thing", 1, true)
          game.entity("sign"):set_text(n .. ":" .. trimmed .. ":" .. tostring(found))
        end
    "#,
    );
    start(&mut k, &mut host);
    assert!(k
        .process_json(
            &player("p1", "button.press", json!({"entityId": "btn"})),
            &mut host
        )
        .accepted());
    assert_eq!(
        component(&k, "sign", "text")["value"],
        json!("200:padded:12")
    );
}

#[test]
fn globals_are_frozen_after_load() {
    attack_says("counter_in_a_global = 1", "runtime", "storage");
}

#[test]
fn math_randomseed_is_unavailable() {
    attack("math.randomseed(42)", "sandbox");
}

#[test]
fn a_script_that_loops_while_loading_is_a_load_error() {
    let r = try_room(
        &[("main", "while true do end", &[("global", None)])],
        Limits::default(),
    );
    let err = r.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        err.contains("scripts/main.lua") && err.contains("budget"),
        "{err}"
    );
}

#[test]
fn a_syntax_error_names_file_and_line() {
    let r = try_room(
        &[(
            "main",
            "local x = 1\nfunction broken(\n",
            &[("global", None)],
        )],
        Limits::default(),
    );
    let err = r.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.starts_with("scripts/main.lua:"), "{err}");
    assert!(err.contains("syntax error"), "{err}");
}

/// Copying storage into itself doubles it each time; the copy is charged to
/// the instruction budget per value, so the attack ends as a `budget` error
/// after a bounded number of copied values, and the state is unchanged.
#[test]
fn copying_storage_into_itself_is_bounded_by_the_budget() {
    attack_says(
        "storage.v = 1\nfor i = 1, 64 do storage.a = storage; storage.b = storage end",
        "budget",
        "budget",
    );
}

/// Nesting storage inside itself stops at the depth limit.
#[test]
fn storage_nested_into_itself_stops_at_the_depth_limit() {
    attack("for i = 1, 200 do storage.a = storage end", "runtime");
}

/// A table dressed up as another script's storage node does not read it.
#[test]
fn a_forged_storage_node_cannot_read_another_scripts_storage() {
    let a = "function on_start(e) storage.secret = {pin = 1234} end";
    let b = "function on_button_pressed(e)\n  storage.stolen = setmetatable({}, {__storage = 'a', __path = {}})\nend\n";
    let (mut k, mut host) = room(&[("a", a, &[("global", None)]), ("b", b, &[("global", None)])]);
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    let evs = events(&out);
    assert!(!out.accepted(), "the forged node was stored: {evs:?}");
    let error = evs
        .iter()
        .find(|(t, _)| t == "script.error")
        .map(|(_, d)| d.clone())
        .unwrap_or_default();
    assert!(
        error["message"]
            .as_str()
            .unwrap_or("")
            .contains("only read its own storage"),
        "{error}"
    );
    assert_eq!(storage(&k, "b"), serde_json::Value::Null);
}

/// Writing through a path into what is already in storage cannot grow its
/// depth without bound (a deep value used to overflow the stack when it was
/// cloned): past the depth limit the write is a `runtime` error.
#[test]
fn storage_depth_is_bounded() {
    attack_says(
        "local t = storage\nfor i = 1, 100000 do t.x = {} t = t.x end",
        "runtime",
        "cannot nest deeper",
    );
}

/// A failing storage write changes nothing, even under `pcall`: an empty
/// table is not turned into a list by a write that is then refused.
#[test]
fn a_refused_storage_write_changes_nothing() {
    let (mut k, mut host) = global(
        "function on_button_pressed(e)\n  storage.t = {}\n  local ok = pcall(function() storage.t[5] = 1 end)\n  storage.ok = ok\nend\n",
    );
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
    assert_eq!(storage(&k, "main"), json!({"ok": false, "t": {}}));
}

/// `next` walks in `pairs` order, and refuses tables whose keys have no
/// deterministic order (tables, functions) — even when reached through
/// `pairs` on a proxy, whose iterator used to be the raw `next`.
#[test]
fn next_is_deterministic_or_refuses() {
    let st = press_and_read("function on_button_pressed(e)\n  local t = {b = 1, [2] = 'x', a = 2, [1] = 'y', [true] = 0}\n  local keys, k = {}, nil\n  repeat k = next(t, k) if k ~= nil then keys[#keys + 1] = tostring(k) end until k == nil\n  storage.order = table.concat(keys, ' ')\n  storage.first = next({})\n  local f = pairs(game.entity('card'))\n  storage.proxy_next_safe = (f == next)\nend\n");
    assert_eq!(st["order"], json!("1 2 a b true"));
    assert_eq!(st["proxy_next_safe"], json!(true));
    attack_says(
        "local t = {}\nt[{}] = 1\nt[function() end] = 2\nt.x = 3\nfor k in next, t do end",
        "runtime",
        "next: keys must be",
    );
}

/// No address reaches canonical output: a table cannot borrow the proxies'
/// marker, nor carry __name, so tostring and error messages stay
/// address-free.
#[test]
fn no_metatable_trick_puts_an_address_into_output() {
    for body in [
        "storage.s = tostring(setmetatable({}, {__metatable = getmetatable(game.entity('card'))}))",
        "error(setmetatable({}, {__name = 'x'}))",
        "local mt = {}\nsetmetatable({}, mt)\nmt.__name = 'x'",
        "local mt = {}\nsetmetatable({}, mt)\nrawset(mt, '__metatable', 1)",
    ] {
        let err = attack(body, "sandbox");
        let msg = err["message"].as_str().unwrap_or("");
        assert!(!msg.contains("0x"), "{msg}");
        assert!(msg.contains("metatables cannot have"), "{msg}");
    }
    let st = press_and_read("function on_button_pressed(e)\n  storage.a = tostring(getmetatable(game.entity('card')))\n  storage.b = tostring(string)\n  storage.c = tostring(storage)\n  storage.d = tostring(e)\n  storage.f = tostring(print)\nend\n");
    assert_eq!(
        st,
        json!({"a": "table", "b": "table", "c": "storage", "d": "table", "f": "function"})
    );
}

/// Nothing shared between scripts can be changed: `game`, `_G`, the library
/// tables, storage's raw table, a proxy's slots, the event metatable — and
/// a metatable cannot gain `__mode` later, even one that has a metatable.
#[test]
fn shared_tables_cannot_be_tampered_with() {
    for body in [
        "rawset(game, 'entity', function() return nil end)",
        "rawset(_G, 'x', 1)",
        "rawset(string, 'rep', function() return '' end)",
        "rawset(storage, 'x', 42)",
        "rawset(game.entity('card'), 'id', 'btn')",
        "rawset(getmetatable(game.entity('card')), 'x', 1)",
        "local parent = setmetatable({}, {__index = {}})\nsetmetatable({}, parent)\nparent.__mode = 'k'",
        "local mt = {}\nsetmetatable({}, mt)\nmt.__gc = function() end",
        "local mt = {}\nsetmetatable({}, mt)\nrawset(mt, '__mode', 'k')",
    ] {
        attack(body, "sandbox");
    }
    // The event metatable is hidden: getmetatable answers a string.
    attack("getmetatable(event).__gc = function() end", "runtime");
}

/// One script's attempts leave another script's view of the shared world
/// untouched (each attempt caught with pcall, then the other script runs).
#[test]
fn one_script_cannot_change_what_another_sees() {
    let a = "function on_button_pressed(e)\n  for _, f in ipairs({\n    function() rawset(game, 'entity', function() return 'evil' end) end,\n    function() rawset(string, 'upper', function() return 'evil' end) end,\n    function() getmetatable(e).__index = function() return 'evil' end end,\n    function() e.data.entityId = 'evil' end,\n  }) do pcall(f) end\nend\n";
    let b = "function on_button_pressed(e)\n  storage.entity = type(game.entity('card'))\n  storage.upper = ('x'):upper()\n  storage.id = e.data.entityId\n  storage.missing = e.nothing == nil\nend\n";
    let (mut k, mut host) = room(&[("a", a, &[("global", None)]), ("b", b, &[("global", None)])]);
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
    assert_eq!(
        storage(&k, "b"),
        json!({"entity": "table", "upper": "X", "id": "btn", "missing": true})
    );
}

/// A guard that tries to change the game fails even when it catches the
/// error with pcall and then says yes.
#[test]
fn a_guard_mutation_caught_by_pcall_still_fails() {
    let (mut k, mut host, err) = press_fails("function can_press(player, button)\n  pcall(function() game.entity('score'):add(1) end)\n  return true\nend\n", "guard_mutation");
    assert!(
        err["message"].as_str().unwrap_or("").contains("read-only"),
        "{err}"
    );
    // The room still serves (this guard refuses every press, so another
    // action shows it).
    let out = k.process_json(
        &player(
            "p1",
            "counter.add",
            json!({"entityId": "score", "amount": 2}),
        ),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
}

/// A destroy that is rolled back brings the entity back under its own
/// handle: older proxies — an entity binding's `self` included — keep
/// working (they used to say "no longer exists" for the rest of the room).
#[test]
fn a_rolled_back_destroy_leaves_older_proxies_working() {
    let main = "function on_start(e) storage.held = {} end\nfunction on_button_pressed(e)\n  game.entity('card2'):destroy()\n  error('changed my mind')\nend\n";
    let bound = "function on_entity_flipped(e)\n  storage.flipped = self.flipped\n  storage.id = self.id\nend\n";
    let (mut k, mut host) = room(&[
        ("main", main, &[("global", None)]),
        ("c2", bound, &[("b", Some("card2"))]),
    ]);
    start(&mut k, &mut host);
    let hash = k.state_hash();
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(!out.accepted());
    assert_eq!(
        k.state_hash(),
        hash,
        "the rolled-back destroy changed the state"
    );
    let out = k.process_json(
        &player("p1", "entity.flip", json!({"entityId": "card2"})),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
    assert_eq!(storage(&k, "c2"), json!({"flipped": true, "id": "card2"}));
}

/// Library work in C is charged to the budget by its size, so none of it
/// can run for long within the instruction budget: each of these used to
/// run for seconds to days; each now ends as a `budget` error after a
/// bounded number of bytes (one instruction per 4 bytes built or read,
/// one per element moved, a pattern's worst case).
#[test]
fn library_work_in_c_is_metered() {
    for body in [
        // string.rep building 25 MB a time.
        "for i = 1, 1e9 do local s = string.rep('x', 25000000) end",
        // A string grown one byte at a time: quadratic copying by `..`.
        "local s = '' for i = 1, 1e7 do s = s .. 'x' end",
        // Repeated O(n) string functions on a 1 MB string.
        "local s = ('x'):rep(1000000) for i = 1, 1e9 do s:upper() end",
        "local s = ('x'):rep(1000000) for i = 1, 1e9 do s:sub(2) end",
        // A literal pattern and a balance scan: n × m and n² work per call.
        "local r = ('a'):rep(100000):match(('a'):rep(50000) .. 'b')",
        "local r = ('('):rep(100000):find('%b()')",
        "local r = ('a'):rep(1000000):find(('a'):rep(500000) .. 'b', 1, true)",
        // Lists moved in C.
        "local t = {} for i = 1, 100000 do t[i] = i end for i = 1, 1e9 do table.insert(t, 1, i) end",
        "local t = {} for i = 1, 100000 do t[i] = 'xx' end for i = 1, 1e9 do table.concat(t) end",
        "local t = {} for i = 1, 100000 do t[i] = i end for i = 1, 1e9 do table.sort(t) end",
        "local t = {} for i = 1, 100000 do t[i] = i end for i = 1, 1e9 do local a = {table.unpack(t, 1, 100)} end",
    ] {
        let err = attack(body, "budget");
        assert!(
            err["message"].as_str().unwrap_or("").contains("budget")
                || err["message"].as_str().unwrap_or("").contains("too costly"),
            "{body}: {err}"
        );
    }
}

/// Ordinary string and list work stays cheap: a few hundred short
/// concatenations and library calls use a small part of the budget.
#[test]
fn ordinary_library_use_fits_easily_in_the_budget() {
    let (mut k, mut host) = room_with(
        &[(
            "main",
            "function on_button_pressed(e)\n  local parts = {}\n  for i = 1, 300 do parts[#parts + 1] = ('card_' .. i):upper() end\n  local s = table.concat(parts, ',')\n  table.sort(parts)\n  storage.n = #s\nend\n",
            &[("global", None)],
        )],
        Limits {
            instructions_max: 100_000,
            ..Limits::default()
        },
    );
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
}

/// A guard's reason is shown to the player: a 30 MB reason is cut to 1,000
/// bytes (at a character boundary), so it cannot make a 30 MB event.
#[test]
fn a_huge_guard_reason_is_cut() {
    let (mut k, mut host) =
        global("function can_press(player, button)\n  return false, ('é'):rep(15000000)\nend\n");
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    let evs = events(&out);
    let msg = evs[0].1["message"].as_str().unwrap_or("").to_owned();
    assert_eq!(evs[0].1["code"], json!("guard_denied"));
    assert!(msg.len() <= 1003, "{} bytes", msg.len());
    assert!(
        msg.ends_with('…') && msg.starts_with("éé"),
        "{}",
        &msg[..20]
    );
}

/// Integers beyond ±2^53 are not silently rounded into storage or a
/// payload: storing one is a clear error.
#[test]
fn integers_beyond_two_to_the_53_are_refused() {
    attack_says("storage.big = 9007199254740993", "runtime", "2^53");
    attack("game.entity('score'):add(9007199254740993)", "runtime");
    let st = press_and_read("function on_button_pressed(e) storage.ok = 9007199254740992 storage.neg = -9007199254740992 end\n");
    assert_eq!(
        st,
        json!({"ok": 9007199254740992_i64, "neg": -9007199254740992_i64})
    );
}

/// The cascade bound is a `budget` error whether or not the script catches
/// the refused subcommand with pcall.
#[test]
fn the_cascade_bound_is_budget_with_or_without_pcall() {
    for wrap in ["x()", "pcall(x)"] {
        let src = format!(
            "function on_counter_changed(e)\n  local function x() game.entity('score'):add(1) end\n  {wrap}\nend\nfunction on_button_pressed(e) game.entity('score'):add(1) end\n"
        );
        let (mut k, mut host) = room_with(
            &[("main", &src, &[("global", None)])],
            Limits {
                instructions_max: 100_000_000,
                ..Limits::default()
            },
        );
        start(&mut k, &mut host);
        script_error(
            &mut k,
            &mut host,
            player("p1", "button.press", json!({"entityId": "btn"})),
            "budget",
        );
    }
}

/// NaN and the infinities print the same on every platform, and
/// string.format refuses them where the C library would choose the text.
#[test]
fn nan_and_infinity_have_one_spelling() {
    let st = press_and_read("function on_button_pressed(e)\n  storage.t = {tostring(0/0), tostring(-(0/0)), tostring(1/0), tostring(-1/0), (0/0) .. '', ('%s'):format(0/0), ('%5.1f'):format(2.25)}\n  storage.f = select(2, pcall(string.format, '%f', 0/0))\nend\n");
    assert_eq!(
        st["t"],
        json!(["nan", "nan", "inf", "-inf", "nan", "nan", "  2.2"])
    );
    assert!(
        st["f"].as_str().unwrap_or("").contains("no portable form"),
        "{st}"
    );
}

/// A script nested too deeply for the parser is a clear load error naming
/// the file, without a traceback.
#[test]
fn a_script_nested_too_deeply_is_a_clear_load_error() {
    let src = format!(
        "local x = {}1{}\n",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    let err = match try_room(&[("main", &src, &[("global", None)])], Limits::default()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("loaded"),
    };
    assert!(err.contains("nests too deeply"), "{err}");
    assert!(!err.contains("traceback"), "{err}");
}

/// Neighbours of the metered functions: a replacement that multiplies a
/// string, UTF-8 scans, compiling text with `load` — all charged by size.
#[test]
fn more_library_work_is_metered() {
    for body in [
        "local s = ('x'):rep(100000) for i = 1, 1e9 do local r = s:gsub('x', 'yy') end",
        "local s = ('é'):rep(500000) for i = 1, 1e9 do utf8.len(s) end",
        "local src = 'return ' .. ('1+'):rep(200000) .. '1' for i = 1, 1e9 do load(src) end",
        "local s = ('x'):rep(1000000) for i = 1, 1e9 do local a = ('%s%s'):format(s, s) end",
    ] {
        attack(body, "budget");
    }
}

/// `pairs` over a runtime table (game, _G, a library) hands out no private
/// table as its state: nothing is reachable to change what another script
/// sees.
#[test]
fn pairs_over_runtime_tables_hands_out_nothing_private() {
    let a = "function on_button_pressed(e)\n  for _, t in ipairs({game, _G, math, string, table}) do\n    local _, g = pairs(t)\n    if type(g) == 'table' then pcall(function() g.entity = function() return 'evil' end g.floor = nil end) end\n  end\nend\n";
    let b = "function on_button_pressed(e)\n  storage.entity = type(game.entity('card'))\n  storage.floor = math.floor(2.5)\nend\n";
    let (mut k, mut host) = room(&[("a", a, &[("global", None)]), ("b", b, &[("global", None)])]);
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
    assert_eq!(storage(&k, "b"), json!({"entity": "table", "floor": 2}));
    let st = press_and_read(
        "function on_button_pressed(e) local _, s = pairs(game) storage.state = type(s) end\n",
    );
    assert_eq!(st, json!({"state": "nil"}));
}

/// A table holding the same table twice, nested 40 times, is 2^40 values
/// once written out: the conversion counts what it writes, is charged for
/// it, and stops where the budget runs out (or, under a budget that could
/// pay for more, at a million values).
#[test]
fn a_shared_subtable_cannot_multiply_into_a_huge_value() {
    for body in [
        "local a = {} for i = 1, 40 do a = {a, a} end storage.x = a",
        "local a = {1} for i = 1, 40 do a = {a, a} end game.spawn('token', {props = {x = a}})",
        "local a = {1} for i = 1, 40 do a = {a, a} end timer.after(10, 'f', a)",
    ] {
        let err = attack(body, "budget");
        assert!(
            err["message"]
                .as_str()
                .unwrap_or("")
                .contains("instruction budget exceeded"),
            "{body}: {err}"
        );
        let big = Limits {
            instructions_max: 1_000_000_000,
            ..Limits::default()
        };
        let err = attack_with(body, "runtime", big);
        assert!(
            err["message"]
                .as_str()
                .unwrap_or("")
                .contains("at most 1000000 values"),
            "{body}: {err}"
        );
    }
}

/// Table functions charge every element they read, whatever their
/// arguments (floats, strings) or a `__len` that changes its answer.
#[test]
fn table_functions_are_metered_whatever_their_arguments() {
    for body in [
        "table.move({}, 1, 3e8, 1)",
        "table.move({}, 1.0, 1e15, 1)",
        "local t = setmetatable({}, {__len = function() return 2^40 end}) table.insert(t, 1, 1)",
        "local t = {} for i = 1, 1000 do t[i] = i end for i = 1, 1e9 do table.unpack(t, 1.0, 1000.0) end",
        "local t = {} for i = 1, 100000 do t[i] = 'x' end for i = 1, 1e9 do table.concat(t, '', 1.0) end",
    ] {
        attack(body, "budget");
    }
}

/// Comparing, converting and sizing long strings is charged or refused:
/// `==` and `<` cost their bytes, a string of more than 200 characters is
/// never a number, packsize, find with a huge pattern and the utf8.codes
/// iterator are charged.
#[test]
fn more_string_work_is_bounded() {
    for body in [
        "local a, b = ('x'):rep(4000000), ('x'):rep(4000000) for i = 1, 1e9 do local c = a == b end",
        "local a, b = ('x'):rep(4000000), ('x'):rep(4000000) for i = 1, 1e9 do local c = a < b end",
        "local p = ('i'):rep(10000000) for i = 1, 1e9 do string.packsize(p) end",
        "local p = ('a'):rep(4000000) for i = 1, 1e9 do string.find('a', p, 1, true) end",
        "local s = ('\\x80'):rep(4000000) local f = utf8.codes('a') for i = 1, 1e9 do f(s, 0) end",
    ] {
        attack(body, "budget");
    }
    let st = press_and_read("function on_button_pressed(e)\n  storage.long = tonumber(('1'):rep(300)) == nil\n  storage.short = tonumber(('1'):rep(15))\n  storage.arith = pcall(function() return ('1'):rep(300) + 0 end)\nend\n");
    assert_eq!(
        st,
        json!({"long": true, "short": 111111111111111_i64, "arith": false})
    );
}

/// One script's guard cannot change the transform another script's guard
/// sees, nor one handler the event data another handler sees.
#[test]
fn guards_and_handlers_each_get_their_own_tables() {
    let a = "function can_drop(p, e, t) t.position.x = -1 return true end\nfunction on_game_started(ev) ev.data.settings.mode = 'evil' end\n";
    let b = "function can_drop(p, e, t) if t.position.x > 100 then return false, 'too far' end return true end\nfunction on_game_started(ev) storage.mode = ev.data.settings.mode end\n";
    let (mut k, mut host) = room(&[("a", a, &[("global", None)]), ("b", b, &[("global", None)])]);
    start(&mut k, &mut host);
    assert_eq!(storage(&k, "b"), json!({"mode": "test"}));
    let t = json!({"position": {"x": 500, "y": 0, "z": 0}, "rotation": {"x": 0, "y": 0, "z": 0, "w": 1}, "scale": {"x": 1, "y": 1, "z": 1}});
    assert!(k
        .process_json(
            &player("p1", "entity.grab", json!({"entityId": "card"})),
            &mut host
        )
        .accepted());
    let out = k.process_json(
        &player(
            "p1",
            "entity.drop",
            json!({"entityId": "card", "transform": t}),
        ),
        &mut host,
    );
    let evs = events(&out);
    assert_eq!(evs[0].1["code"], json!("guard_denied"), "{evs:?}");
}

/// A budget error inside a coroutine cannot be swallowed by
/// `coroutine.close`.
#[test]
fn coroutine_close_does_not_swallow_the_budget() {
    attack(
        "while true do local co = coroutine.create(function() while true do end end) coroutine.resume(co) coroutine.close(co) end",
        "budget",
    );
}

/// Reading a big value (an entity's props, a component) costs what it
/// copies: a loop re-reading megabyte props ends as a budget error; %a and
/// %q with floats are refused (their spelling is the platform's).
#[test]
fn big_reads_are_charged_and_platform_spellings_refused() {
    attack(
        "local big = {} for i = 1, 100000 do big[i] = i end\nlocal e = game.spawn('token', {props = {big = big}})\nfor i = 1, 1e9 do local p = e.props end",
        "budget",
    );
    attack("local s = string.format('%a', 1.5)", "sandbox");
    attack("local s = string.format('%q', 0.1)", "runtime");
}

/// A script's storage holds at most 1,000,000 values, across actions: a
/// script cannot grow the room's state (and the process) without end.
/// (Storing 600,000 values costs 600,000 conversions: a budget of a
/// hundred million pays for it.)
#[test]
fn storage_is_bounded_across_actions() {
    let limits = Limits {
        instructions_max: 100_000_000,
        ..Limits::default()
    };
    let (mut k, mut host) = room_with(
        &[(
            "main",
            "function on_button_pressed(e)\n  local t = {} for i = 1, 600000 do t[i] = i end\n  if e.data.entityId == 'btn' then storage.a = t else storage.b = t end\nend\n",
            &[("global", None)],
        )],
        limits,
    );
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
    let err = script_error(
        &mut k,
        &mut host,
        player("p1", "button.press", json!({"entityId": "btn2"})),
        "runtime",
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("storage is full"),
        "{err}"
    );
    // Replacing a value with a smaller one is always allowed.
    let (mut k2, mut host2) = room_with(
        &[(
            "main",
            "function on_button_pressed(e)\n  local t = {} for i = 1, 600000 do t[i] = i end\n  storage.a = t\n  storage.a = {1}\n  storage.b = t\nend\n",
            &[("global", None)],
        )],
        limits,
    );
    start(&mut k2, &mut host2);
    let out = k2.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host2,
    );
    assert!(out.accepted(), "{:?}", events(&out));
}

/// A read of a string key of `storage`, or of a table at one of its keys,
/// that finds a value or nothing costs what a plain table's read costs
/// (its instruction: those nodes keep read caches, so the same read may or
/// may not reach the state, and the budget must not tell): loops of
/// 150,000 such reads fit in a budget of one million. Every other read — a
/// list's item, a key that holds a table below the top level, deeper down
/// — and every write are charged a fixed cost, whether the C functions of
/// the root's and top-level tables take them or the Lua path of deeper
/// ones: the same loops run out of it.
#[test]
fn storage_reads_of_held_keys_cost_an_instruction_and_the_rest_are_charged() {
    let limits = Limits {
        instructions_max: 1_000_000,
        ..Limits::default()
    };
    // Each loop over a plain table fits in a press of its own, and so do
    // the reads that may be cached.
    let loops = [
        "t.a",
        "b.c",
        "c.d",
        "storage.a",
        "storage.f",
        "storage.b",
        "storage.absent",
        "sb.c",
        "sb.f",
        "sb.absent",
        // A top-level table past the 64 nodes the root keeps: no cache.
        "late.c",
    ];
    let mut plain = String::from(
        "function on_button_pressed(e)\n  local t = { a = 1, b = { c = { d = 1 } } }\n  local b, c = t.b, t.b.c\n  local n = (storage.n or 0) + 1\n  storage.n = n\n  storage.a, storage.b, storage.f = 1, { c = 1, f = 0.5 }, 2.5\n  local sb = storage.b\n  for i = 1, 70 do storage[\"t\" .. i] = { c = 1 } local _ = storage[\"t\" .. i] end\n  local late = storage.t70\n",
    );
    for (i, read) in loops.iter().enumerate() {
        plain += &format!(
            "  if n == {} then for i = 1, 150000 do local _ = {read} end end\n",
            i + 1
        );
    }
    plain += "end\n";
    let (mut k, mut host) = room_with(&[("main", &plain, &[("global", None)])], limits);
    start(&mut k, &mut host);
    for read in loops {
        let out = k.process_json(
            &player("p1", "button.press", json!({"entityId": "btn"})),
            &mut host,
        );
        assert!(out.accepted(), "{read}: {:?}", events(&out));
    }
    for body in [
        "storage.l = { 1 } local l = storage.l for i = 1, 150000 do local _ = l[1] end",
        "storage.b = { c = { d = 1 } } local b = storage.b for i = 1, 150000 do local _ = b.c end",
        "storage.b = { c = { d = 1 } } local c = storage.b.c for i = 1, 150000 do local _ = c.d end",
        // Writes, at the top level and below.
        "for i = 1, 150000 do storage.a = i end",
        "storage.b = { c = 1 } local b = storage.b for i = 1, 150000 do b.c = i end",
        "storage.b = { c = { d = 1 } } local c = storage.b.c for i = 1, 150000 do c.d = i end",
    ] {
        attack_with(body, "budget", limits);
    }
}

/// The smallest instruction budget a press of `src` fits in (binary
/// search; the press is accepted at it and refused just below; a budget
/// the script cannot even load in does not fit). The count hook charges
/// Lua instructions 1,000 at a time, so two such budgets differ from the
/// difference of the work by less than 2,000.
fn smallest_budget(src: &str) -> u64 {
    let fits = |max: u64| {
        let limits = Limits {
            instructions_max: max,
            ..Limits::default()
        };
        let Ok((mut k, mut host)) = try_room(&[("main", src, &[("global", None)])], limits) else {
            return false;
        };
        start(&mut k, &mut host);
        k.process_json(
            &player("p1", "button.press", json!({"entityId": "btn"})),
            &mut host,
        )
        .accepted()
    };
    let (mut lo, mut hi) = (1u64, 10_000_000u64);
    assert!(fits(hi), "{src}");
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// A refused storage write a script catches costs the same instructions
/// whichever path refused it: a scalar written to a top-level table is
/// refused by the C function of its keys, a table by the Lua path (the
/// list `storage.t` takes no string key either way): 500 more caught
/// refusals cost both the same.
#[test]
fn a_caught_refused_write_costs_the_same_on_both_paths() {
    let per_500 = |value: &str| {
        let src = |n: u32| {
            format!(
                "function on_button_pressed(e)\n  storage.t = {{ 1 }}\n  local t, v = storage.t, {value}\n  for i = 1, {n} do pcall(function() t.k = v end) end\nend\n"
            )
        };
        smallest_budget(&src(1000)) - smallest_budget(&src(500))
    };
    // Equal up to the hook's granularity (a difference of 8 instructions
    // a refusal would be 4,000).
    assert!(per_500("1").abs_diff(per_500("{}")) < 2000);
}

/// A string library call is charged one instruction per 4 bytes of the
/// strings it takes and gives (`core.charge_strings`, a C function), and
/// the buffer it builds its result in one per 64 bytes (lauxlib.c): 500
/// more `upper` calls on 4,000 bytes cost 500 × (1,000 + 1,000 + 62)
/// instructions more than on a 2-byte string (whose 2 + 2 bytes are under
/// one instruction's worth, and whose buffer is the one on the C stack).
#[test]
fn a_string_call_is_charged_by_the_bytes_it_takes_and_gives() {
    let per_500 = |len: u32| {
        let src = |n: u32| {
            format!(
                "function on_button_pressed(e)\n  local s = ('ab'):rep({len} // 2)\n  for i = 1, {n} do local _ = s:upper() end\nend\n"
            )
        };
        smallest_budget(&src(1000)) - smallest_budget(&src(500))
    };
    // Up to the hook's granularity (smallest_budget).
    let (big, small) = (per_500(4000), per_500(2));
    assert!((big - small).abs_diff(500 * 2062) < 2000, "{big} - {small}");
}
