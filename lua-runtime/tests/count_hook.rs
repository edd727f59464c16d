//! The vendored Lua counts instructions for the count hook inline when the
//! hook is not due (third_party/lua-src/PATCHES.md, `vmfetch`). The budget
//! rests on that count, so it must be exactly the count stock Lua keeps: a
//! hook every instruction (which never takes the inline path) and a hook
//! every n instructions (which almost always does) must see the same total.

use std::cell::Cell;
use std::rc::Rc;

use mlua::{HookTriggers, Lua, VmState};

/// How many times a hook every `n` instructions fires while `chunk` runs.
fn fires(chunk: &str, n: u32) -> u64 {
    let lua = Lua::new();
    let count = Rc::new(Cell::new(0u64));
    let c = count.clone();
    lua.set_hook(HookTriggers::new().every_nth_instruction(n), move |_, _| {
        c.set(c.get() + 1);
        Ok(VmState::Continue)
    })
    .expect("hook");
    lua.load(chunk).exec().expect("runs");
    count.get()
}

#[test]
fn a_hook_every_n_instructions_fires_once_per_n_of_the_exact_count() {
    let chunks = [
        // Loops, calls, returns of 0, 1 and many values, closures.
        "local s = 0 for i = 1, 1000 do s = s + i end",
        "local function f(x) return x + 1 end local t = 0 for i = 1, 300 do t = f(t) end",
        "local function g() end local function h() return 1, 2, 3 end for i = 1, 200 do g() h() end",
        "local t = {} for i = 1, 500 do t[i] = function() return i end end for i = 1, 500 do t[i]() end",
        // Concatenation charges the count from inside the instruction.
        "local s = '' for i = 1, 100 do s = s .. string.rep('x', 200) end",
        // Pattern matching and table functions charge it from C.
        "local s = string.rep('ab', 2000) for i = 1, 20 do s:find('b+a$') end table.sort({5, 3, 1, 4})",
    ];
    for chunk in chunks {
        let exact = fires(chunk, 1);
        assert!(exact > 100, "{chunk}: {exact} instructions");
        for n in [2, 7, 64, 1000] {
            assert_eq!(
                fires(chunk, n),
                exact / u64::from(n),
                "{chunk}: a hook every {n} instructions"
            );
        }
    }
}
