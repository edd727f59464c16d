//! Host ceilings for the limits a game may set in `game.json`
//! (`limits.instructionsMax`, `limits.memoryBytesMax`, `limits.bytesMax`;
//! docs/lua-api.md, Limits and ceilings): the most a game may ask for on
//! this host, and the least that makes sense. A host (`digipology serve`,
//! `simulate`, `check`, `run`) sets them once, from its operator's flags,
//! before it loads any game; a game asking for more is refused with the
//! file and the field.

use std::sync::RwLock;

/// The ceilings a host holds games to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ceilings {
    /// The most Lua instructions one action may run.
    pub instructions_max: u64,
    /// The most bytes a room's Lua VM may allocate.
    pub memory_bytes_max: u64,
    /// The largest byte budget a room may have (what its state holds).
    pub bytes_max: u64,
}

/// A hundred million instructions: a few tenths of a second of one core.
pub const INSTRUCTIONS_CEILING: u64 = 100_000_000;

/// One GiB of Lua memory.
pub const MEMORY_CEILING: u64 = 1 << 30;

/// One GiB of held state.
pub const BYTES_CEILING: u64 = 1 << 30;

impl Default for Ceilings {
    fn default() -> Self {
        Ceilings {
            instructions_max: INSTRUCTIONS_CEILING,
            memory_bytes_max: MEMORY_CEILING,
            bytes_max: BYTES_CEILING,
        }
    }
}

/// The fewest instructions an action may be given: loading a game's scripts
/// runs under the same budget, and less than this loads almost nothing.
pub const INSTRUCTIONS_MIN: u64 = 100_000;

/// The least memory a VM may be given: the runtime itself needs about a
/// megabyte.
pub const MEMORY_BYTES_MIN: u64 = 4 << 20;

/// The smallest byte budget a room may have.
pub const BYTES_MIN: u64 = 64 << 10;

static CEILINGS: RwLock<Ceilings> = RwLock::new(Ceilings {
    instructions_max: INSTRUCTIONS_CEILING,
    memory_bytes_max: MEMORY_CEILING,
    bytes_max: BYTES_CEILING,
});

/// Sets the ceilings for every game this process loads from now on.
///
/// # Errors
/// A ceiling below the least a game may ask for (the message names the
/// flag's value and the least allowed).
pub fn set(c: Ceilings) -> Result<(), String> {
    for (name, v, min) in [
        ("instructions", c.instructions_max, INSTRUCTIONS_MIN),
        ("memory", c.memory_bytes_max, MEMORY_BYTES_MIN),
        ("bytes", c.bytes_max, BYTES_MIN),
    ] {
        if v < min {
            return Err(format!(
                "the {name} ceiling {v} is below the least a game may have ({min})"
            ));
        }
    }
    let mut now = CEILINGS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *now = c;
    Ok(())
}

/// The ceilings in force.
pub fn get() -> Ceilings {
    *CEILINGS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
