//! What a budget's worth of each library function costs, against a budget's
//! worth of plain Lua instructions (docs/lua-api.md, What work costs;
//! docs/performance.md, Charges).
//!
//! Every case runs one press whose handler repeats one library call (with
//! the arguments that make it do the most work for its charge) until the
//! instruction budget is spent. The figure printed is the time that takes
//! divided by the time `while true do end` takes to spend the same budget,
//! in the same run: a ratio near 1 (or below) means the call is charged
//! for its work; a ratio far above 1 means a script could make the room do
//! that many times more work than its budget says.
//!
//! `cargo bench --bench charges` (optional filter: a substring of the case
//! names). Not a criterion bench: each case is one figure, a median of
//! five runs.

use std::time::{Duration, Instant};

use digipology_kernel::{state_from_game, Kernel};
use digipology_lua::{BindingSpec, Limits, LuaHost, Modules, ScriptSpec};
use serde_json::json;

/// The budget each case spends.
const BUDGET: u64 = 20_000_000;

/// Set-up run once when the script loads (locals every case may use).
const PRELUDE: &str = r#"
local big = {}
for i = 1, 100000 do big[i] = i end
local floats = {}
for i = 1, 1000 do floats[i] = i + 0.123456789 end
local digits = string.rep("7", 199)
local hexdigits = "0x" .. string.rep("f", 197)
local long = string.rep("ab", 50000)
local long2 = string.rep("ab", 49999) .. "ac"
local long3 = string.rep("ab", 50000)
local keyed = {[long] = true}
local nuls, nuls2 = string.rep("\0", 100000), string.rep("\0", 100000)
local bytes = {}
for i = 1, 10000 do bytes[i] = 65 + i % 26 end
local ustr = string.rep("é", 5000)
local src = string.rep("local a = 1 + 2 * 3\n", 500)
local function vararg(...) return ... end
"#;

/// (name, body of the loop) — each body runs again and again until the
/// budget is spent.
const CASES: &[(&str, &str)] = &[
    ("while true do end (the baseline)", ""),
    ("x = x + 1", "x = (x or 0) + 1"),
    ("plain Lua: local t = {}", "local t = {}"),
    (
        "plain Lua: local t = {1, 2, 3, 4}",
        "local t = {1, 2, 3, 4}",
    ),
    ("plain Lua: a call, f()", "noop()"),
    ("plain Lua: a closure", "local f = function() return x end"),
    (
        "plain Lua: a new short string",
        "x = (x or 0) + 1 local s = 'k' .. x",
    ),
    (
        "plain Lua: t[k] = v, new keys",
        "x = (x or 0) + 1 if x > 500000 then x = 1 end big[x + 100000] = x",
    ),
    ("string.rep('', 1e6)", "string.rep('', 1000000)"),
    ("string.rep('', 1e6, '')", "string.rep('', 1000000, '')"),
    ("string.rep('x', 1e5)", "string.rep('x', 100000)"),
    (
        "select('#', ...) of 100k varargs",
        "VARARG select('#', ...)",
    ),
    ("select(2, ...) of 100k varargs", "VARARG select(2, ...)"),
    ("{...} of 100k varargs", "VARARG local t = {...}"),
    ("table.pack(...) of 100k varargs", "VARARG table.pack(...)"),
    ("return ... of 100k varargs", "VARARG vararg(...)"),
    ("table.unpack of 100k", "table.unpack(big)"),
    ("tonumber of 199 digits", "tonumber(digits)"),
    ("tonumber of 199 hex digits", "tonumber(hexdigits)"),
    ("tonumber(s, 36) of 199 digits", "tonumber(digits, 36)"),
    ("199 digits + 0 (coercion)", "local n = digits + 0"),
    ("tostring of a float", "tostring(1.2345678901234)"),
    ("float .. ''", "local s = 1.2345678901234 .. ''"),
    ("table.concat of 1000 floats", "table.concat(floats, ',')"),
    (
        "string.format('%.99f', 1e308)",
        "string.format('%.99f', 1e308)",
    ),
    (
        "string.format('%g', float)",
        "string.format('%g', 1.2345678901234)",
    ),
    (
        "string.byte(s, 1, -1) of 10k",
        "string.byte(long, 1, 10000)",
    ),
    ("string.char of 10k", "string.char(table.unpack(bytes))"),
    ("utf8.char of 10k", "utf8.char(table.unpack(bytes))"),
    (
        "utf8.codepoint(s, 1, -1) of 10k",
        "utf8.codepoint(ustr, 1, -1)",
    ),
    ("utf8.len of 10k", "utf8.len(ustr)"),
    (
        "string.find plain, 100 kB",
        "string.find(long, 'abc', 1, true)",
    ),
    ("string.find pattern, 100 kB", "string.find(long, 'a%d')"),
    (
        "string.gsub empty pattern, 100 kB",
        "string.gsub(long, '', '')",
    ),
    ("string.gsub '.' , 100 kB", "string.gsub(long, '.', 'x')"),
    ("string.upper, 100 kB", "string.upper(long)"),
    ("string.sub, 100 kB", "string.sub(long, 2, -2)"),
    ("long == long, 100 kB", "local b = long == long2"),
    ("long < long, 100 kB", "local b = long < long2"),
    ("long == long, equal 100 kB", "local b = long == long3"),
    ("rawequal, equal 100 kB", "local b = rawequal(long, long3)"),
    ("t[k], an equal 100 kB key", "local b = keyed[long3]"),
    ("'\\0' strings <, 100 kB", "local b = nuls < nuls2"),
    (
        "string.pack 1000 items",
        "string.pack(string.rep('i4', 1000), table.unpack(big, 1, 1000))",
    ),
    (
        "string.unpack 1000 items",
        "string.unpack(string.rep('b', 1000), long)",
    ),
    (
        "table.sort of 1000",
        "local t = {} for i = 1, 1000 do t[i] = (i * 7919) % 1000 end table.sort(t)",
    ),
    (
        "table.insert at the front of 10k",
        "local t = {table.unpack(big, 1, 10000)} table.insert(t, 1, 0)",
    ),
    ("table.move 10k", "table.move(big, 1, 10000, 2, {})"),
    ("table.concat of 10k strings", "table.concat(bytes, ',')"),
    ("load of 10 kB", "load(src)"),
    ("pcall(error)", "pcall(error, 'x')"),
    ("error with a position", "pcall(function() error('x') end)"),
    ("coroutine.wrap", "coroutine.wrap(function() end)()"),
    ("setmetatable", "setmetatable({}, {__index = {}})"),
    ("pairs over 1000 keys", "SMALLPAIRS"),
    ("tostring of a table", "tostring({})"),
    ("#t of 100k", "local n = #big"),
    ("game.entities() of 2000", "game.entities()"),
    ("deck:items() of 2000", "game.entity('deck'):items()"),
    (
        "e.props (100 values)",
        "local p = game.entity('e0001').props",
    ),
    (
        "storage write of a 1000-item list",
        "storage.list = {table.unpack(big, 1, 1000)}",
    ),
    ("storage read of a 1000-item list", "STORAGE"),
    ("storage write of a 100 kB string", "storage.s = long"),
    (
        "refused storage write over 1000 values",
        "if not storage.l then storage.l = {table.unpack(big, 1, 1000)} end pcall(function() storage.l = print end)",
    ),
    (
        "timer.after with 1000 values of data",
        "timer.after(1, 'noop', {table.unpack(big, 1, 1000)})",
    ),
];

/// Cases that cannot run to a big budget (a subcommand loop would first
/// meet the cascade bound): (name, whole handler body, budget, memory
/// ceiling). Their ratio is taken against the baseline's time per
/// instruction.
const SMALL_CASES: &[(&str, &str, u64, usize)] = &[
    (
        "e:flip() (a subcommand)",
        "local e = game.entity('e0000') while true do e:flip() end",
        200_000,
        64 << 20,
    ),
    (
        "deck:shuffle() of 2000 (a subcommand)",
        "local d = game.entity('deck') while true do d:shuffle() end",
        1_000_000,
        64 << 20,
    ),
    (
        "a card to the front of a list (a subcommand)",
        "local d, h = game.entity('deck'), game.entity('hand')\n\
         d:top():move_to(h) while true do d:top():move_to(h, 1) end",
        1_000_000,
        64 << 20,
    ),
    (
        "allocating at the memory ceiling (emergency collections)",
        "local keep = {}\n\
         pcall(function() local i = 0 while true do i = i + 1 keep[i] = {} end end)\n\
         for j = 1, 200 do keep[#keep] = nil end\n\
         while true do local t = {} end",
        20_000_000,
        16 << 20,
    ),
];

fn game() -> serde_json::Value {
    let mut entities = Vec::new();
    let mut items = Vec::new();
    for i in 0..2000 {
        let id = format!("e{i:04}");
        let props: serde_json::Map<String, serde_json::Value> =
            (0..100).map(|j| (format!("p{j}"), json!(j))).collect();
        entities.push(
            json!({"id": id, "props": props, "components": {"grabbable": {}, "flippable": {}}}),
        );
        items.push(json!(format!("e{i:04}")));
    }
    entities.push(json!({"id": "deck", "components": {"deck": {}, "container": {"items": items}}}));
    entities.push(json!({"id": "btn", "components": {"button": {}}}));
    entities.push(json!({"id": "hand", "components": {"container": {}}}));
    json!({"seats": ["a"], "entities": entities})
}

fn script(body: &str) -> String {
    let whole = body.starts_with("WHOLE ");
    let (setup, body) = if let Some(rest) = body.strip_prefix("VARARG ") {
        (
            String::new(),
            format!("local function f(...) while true do {rest} end end f(table.unpack(big))"),
        )
    } else if body == "SMALLPAIRS" {
        (
            String::new(),
            "local t = {} for i = 1, 1000 do t['k' .. i] = i end while true do for k in pairs(t) do end end"
                .to_owned(),
        )
    } else if body == "STORAGE" {
        (
            String::new(),
            "storage.list = {table.unpack(big, 1, 1000)} while true do local l = storage.list local x = l[500] end"
                .to_owned(),
        )
    } else if let Some(rest) = body.strip_prefix("WHOLE ") {
        (String::new(), rest.to_owned())
    } else {
        (String::new(), format!("while true do {body} end"))
    };
    // A whole body is run under a small budget: without the prelude's
    // tables, which would not load under it.
    let prelude = if whole { "" } else { PRELUDE };
    format!(
        "{prelude}{setup}\nlocal x\nfunction noop() end\nfunction on_button_pressed(event)\n{body}\nend\n"
    )
}

fn press_time(body: &str) -> Duration {
    press_time_with(body, BUDGET, Limits::default().memory_bytes_max)
}

fn press_time_with(body: &str, budget: u64, memory: usize) -> Duration {
    let state = state_from_game(&game(), 1).expect("bench table");
    let specs = vec![ScriptSpec {
        id: "main".into(),
        file: "scripts/main.lua".into(),
        source: script(body),
        bindings: vec![BindingSpec {
            id: "global".into(),
            entity: None,
        }],
    }];
    let limits = Limits {
        instructions_max: budget,
        memory_bytes_max: memory,
        ..Limits::default()
    };
    let mut host = LuaHost::new(&specs, Modules::new(), &state, limits).expect("script loads");
    let mut k = Kernel::new(state);
    for line in [
        r#"{"type":"system.game_start","source":{"kind":"system"},"payload":{}}"#,
        r#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"p1"}}"#,
    ] {
        assert!(k.process_line(line, &mut host).accepted());
    }
    let press = r#"{"type":"button.press","source":{"kind":"player","playerId":"p1"},"payload":{"entityId":"btn"}}"#;
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let out = k.process_line(press, &mut host);
        times.push(t.elapsed());
        let text: String = out.events.iter().map(|e| e.to_json_line()).collect();
        assert!(
            text.contains("\"kind\":\"budget\"") && text.contains("instruction budget exceeded"),
            "{body}: expected a budget error, got {text}"
        );
    }
    times.sort();
    times[2]
}

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let base = press_time("");
    println!(
        "budget {BUDGET} instructions; baseline (while true do end): {:.1} ms",
        base.as_secs_f64() * 1e3
    );
    println!("{:<44} {:>10} {:>8}", "case", "ms", "ratio");
    for (name, body) in CASES {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let t = press_time(body);
        println!(
            "{name:<44} {:>10.1} {:>8.2}",
            t.as_secs_f64() * 1e3,
            t.as_secs_f64() / base.as_secs_f64()
        );
    }
    #[allow(clippy::cast_precision_loss)]
    let per_instruction = base.as_secs_f64() / BUDGET as f64;
    for (name, body, budget, memory) in SMALL_CASES {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let t = press_time_with(&format!("WHOLE {body}"), *budget, *memory);
        #[allow(clippy::cast_precision_loss)]
        let expected = per_instruction * *budget as f64;
        println!(
            "{name:<44} {:>10.1} {:>8.2}",
            t.as_secs_f64() * 1e3,
            t.as_secs_f64() / expected
        );
    }
}
