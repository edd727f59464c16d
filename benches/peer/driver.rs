//! The peer workload driver (described in docs/performance.md): move streams
//! generated outside the engine with xorshift32, the two engine variants,
//! and the two checksums that prove an engine processed exactly the stream.
//! Shared by `tests/peer_workload.rs` and `benches/peer_workload.rs`.
#![allow(dead_code)]
// The workload is defined in 32-bit integer arithmetic (as the JavaScript
// peers run it); these casts are that arithmetic, on small values, and the
// checksums the tests pin prove them unchanged.
#![allow(
    clippy::cast_possible_wrap,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use std::path::Path;

use digipology_kernel::{
    state_from_game, Action, ClosureHost, Event, GuardKind, Id, Kernel, ScriptHost, Source, State,
    Verdict,
};
use serde_json::json;

/// One move of the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    CounterAdd(u32, i32),
    Flip(u32),
    Shuffle,
    Draw(u32, u32),
    Roll(u32),
    Refill,
}

/// The workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    CounterAdd,
    Flip,
    Mixed,
    Reject50,
    Shuffle,
    Roll,
    Draw,
}

impl Workload {
    pub const ALL: [Workload; 7] = [
        Workload::CounterAdd,
        Workload::Flip,
        Workload::Mixed,
        Workload::Reject50,
        Workload::Shuffle,
        Workload::Roll,
        Workload::Draw,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Workload::CounterAdd => "counterAdd",
            Workload::Flip => "flip",
            Workload::Mixed => "mixed",
            Workload::Reject50 => "reject50",
            Workload::Shuffle => "shuffle",
            Workload::Roll => "roll",
            Workload::Draw => "draw",
        }
    }
}

struct XorShift32(u32);

impl XorShift32 {
    fn u(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }
}

const TOKENS: std::ops::Range<u32> = 9..148;
const HANDS: [u32; 4] = [1, 2, 3, 4];
const DICE: [u32; 4] = [5, 6, 7, 8];

fn flippable() -> impl Iterator<Item = u32> {
    9..200
}

fn unlocked() -> Vec<u32> {
    flippable().filter(|i| i % 5 != 0).collect()
}

fn locked() -> Vec<u32> {
    flippable().filter(|i| i % 5 == 0).collect()
}

/// The first `n` moves of a workload.
pub fn moves(w: Workload, n: usize) -> Vec<Move> {
    let mut r = XorShift32(0x9E37_79B9);
    let (unlocked, locked) = (unlocked(), locked());
    let tokens: Vec<u32> = TOKENS.collect();
    let mut deck = 52u32;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let counter_add = |r: &mut XorShift32| {
            let id = tokens[(r.u() % 139) as usize];
            let mut a = (r.u() % 10) as i32 - 5;
            if a >= 0 {
                a += 1;
            }
            Move::CounterAdd(id, a)
        };
        let flip = |r: &mut XorShift32| Move::Flip(unlocked[(r.u() % 153) as usize]);
        let mut draw = |r: &mut XorShift32| {
            let hand = HANDS[(r.u() % 4) as usize];
            let count = 1 + r.u() % 3;
            if deck < count {
                deck = 52;
                Move::Refill
            } else {
                deck -= count;
                Move::Draw(hand, count)
            }
        };
        let roll = |r: &mut XorShift32| Move::Roll(DICE[(r.u() % 4) as usize]);
        let m = match w {
            Workload::CounterAdd => counter_add(&mut r),
            Workload::Flip => flip(&mut r),
            Workload::Reject50 if i % 2 == 0 => flip(&mut r),
            Workload::Reject50 => Move::Flip(locked[(r.u() % 38) as usize]),
            Workload::Shuffle => Move::Shuffle,
            Workload::Roll => roll(&mut r),
            Workload::Draw => draw(&mut r),
            Workload::Mixed => match r.u() % 100 {
                0..=39 => counter_add(&mut r),
                40..=69 => flip(&mut r),
                70..=79 => Move::Shuffle,
                80..=89 => draw(&mut r),
                _ => roll(&mut r),
            },
        };
        out.push(m);
    }
    out
}

fn fnv(hash: &mut u32, bytes: &[u8]) {
    for b in bytes {
        *hash ^= u32::from(*b);
        *hash = hash.wrapping_mul(0x0100_0193);
    }
}

/// FNV-1a-32 over `[op, a, b, c]` int32 LE quadruples.
pub fn seq_checksum(moves: &[Move]) -> u32 {
    let mut h = 0x811c_9dc5u32;
    for m in moves {
        let q: [i32; 4] = match *m {
            Move::CounterAdd(id, a) => [0, id as i32, a, 0],
            Move::Flip(id) => [1, id as i32, 0, 0],
            Move::Shuffle => [2, 0, 0, 0],
            Move::Draw(hand, count) => [3, 0, hand as i32, count as i32],
            Move::Roll(id) => [4, id as i32, 0, 0],
            Move::Refill => [5, 0, 0, 0],
        };
        for x in q {
            fnv(&mut h, &x.to_le_bytes());
        }
    }
    h
}

/// FNV-1a-32 over, per id 0..199: faceUp, locked, value, cards held.
pub fn neutral_digest(state: &State) -> u32 {
    let mut h = 0x811c_9dc5u32;
    for i in 0..200u32 {
        let e = state.entity(&id(i)).expect("every peer entity exists");
        let c = &e.components;
        let face_up = if c.die.is_some() {
            1
        } else {
            u8::from(c.flippable == Some(true))
        };
        let locked = u8::from(c.lockable == Some(true));
        let value = c.counter.map_or(0, |k| k.value as i32);
        let cards = c.container.as_ref().map_or(0, |k| k.items.len() as i32);
        fnv(&mut h, &[face_up, locked]);
        fnv(&mut h, &value.to_le_bytes());
        fnv(&mut h, &cards.to_le_bytes());
    }
    h
}

pub fn id(i: u32) -> String {
    format!("e{i:03}")
}

thread_local! {
    static P1: Id = Id::from("p1");
}

/// The engine action for a move (player `p1`; every action shares one id).
pub fn action(m: Move) -> Action {
    let p1 = || Source::Player {
        player_id: P1.with(Id::clone),
    };
    match m {
        Move::CounterAdd(i, a) => {
            Action::new("counter.add", p1(), json!({"entityId": id(i), "amount": a}))
        }
        Move::Flip(i) => Action::new("entity.flip", p1(), json!({"entityId": id(i)})),
        Move::Shuffle => Action::new("deck.shuffle", p1(), json!({"deckId": "e000"})),
        Move::Draw(h, n) => Action::new(
            "deck.draw_to_container",
            p1(),
            json!({"deckId": "e000", "target": id(h), "count": n}),
        ),
        Move::Roll(i) => Action::new("die.roll", p1(), json!({"entityId": id(i)})),
        Move::Refill => Action::new("button.press", p1(), json!({"entityId": "refill"})),
    }
}

fn game_json() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peer/game.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("peer game"))
        .expect("peer game JSON")
}

/// The two engine variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The flip guard and the refill handler in Rust, through the script-host trait.
    KernelOnly,
    /// The same rules in Lua (benches/peer/scripts/peer.lua).
    Scripted,
}

/// The kernel-only rules: a `can_flip` guard and the refill handler.
pub fn rust_rules() -> ClosureHost {
    let (rules, global, deck) = (Id::from("rules"), Id::from("global"), Id::from("e000"));
    ClosureHost::new()
        .with_guard(|state, req| {
            let locked = req.kind == GuardKind::Flip
                && state
                    .get(req.entity_key)
                    .is_some_and(|e| e.components.lockable == Some(true));
            if locked {
                Verdict::Deny {
                    reason: Some("locked".into()),
                }
            } else {
                Verdict::Allow
            }
        })
        .with_handler_for(&["button.pressed"], move |ctx, _event: &Event| {
            for h in 1..=4 {
                let hand = id(h);
                let cards: Vec<Id> = ctx
                    .state()
                    .entity(&hand)
                    .and_then(|e| e.components.container.as_ref())
                    .map(|c| c.items.clone())
                    .unwrap_or_default();
                for card in cards {
                    let len = ctx
                        .state()
                        .entity(&deck)
                        .and_then(|e| e.components.container.as_ref())
                        .map_or(0, |c| c.items.len());
                    let _ =
                        ctx.move_item(&rules, &global, &card, Some(&hand), Some(&deck), len as u64);
                }
            }
            Ok(())
        })
}

/// A started room with player `p1`, and the host of the variant.
pub fn room(variant: Variant, seed: u64) -> (Kernel, Box<dyn ScriptHost>) {
    let game = game_json();
    let state = state_from_game(&game, seed).expect("peer table loads");
    let mut host: Box<dyn ScriptHost> = match variant {
        Variant::KernelOnly => Box::new(rust_rules()),
        Variant::Scripted => {
            let source = std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peer/scripts/peer.lua"),
            )
            .expect("peer script");
            let spec = digipology_lua::ScriptSpec {
                id: "peer".into(),
                file: "scripts/peer.lua".into(),
                source,
                bindings: vec![digipology_lua::BindingSpec {
                    id: "global".into(),
                    entity: None,
                }],
            };
            Box::new(
                digipology_lua::LuaHost::new(
                    &[spec],
                    digipology_lua::Modules::new(),
                    &state,
                    digipology_lua::Limits::default(),
                )
                .expect("peer script loads"),
            )
        }
    };
    let mut k = Kernel::new(state);
    for line in [
        r#"{"type":"system.game_start","source":{"kind":"system"},"payload":{}}"#,
        r#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"p1"}}"#,
    ] {
        assert!(k.process_line(line, host.as_mut()).accepted());
    }
    (k, host)
}
