//! The whole path a line takes through `digipology run`, in process: the
//! line read from the input, parsed into its envelope, processed by the
//! kernel, and its events written as JSON lines. One iteration runs 10,000
//! `counter.add` lines over a 200-counter table into an in-memory sink
//! (the file system is left out; `docs/performance.md` also times the
//! command itself on a 1,000,000-line file).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use digipology_kernel::state_from_game;
use digipology_room::room::Room;
use serde_json::json;

const LINES: u64 = 10_000;

fn table() -> serde_json::Value {
    let entities: Vec<_> = (0..200)
        .map(|i| json!({"id": format!("c{i:03}"), "components": {"counter": {}}}))
        .collect();
    json!({"seats": ["a"], "entities": entities})
}

fn input() -> Vec<u8> {
    let mut text = String::from(
        "{\"type\":\"system.game_start\",\"source\":{\"kind\":\"system\"},\"payload\":{}}\n\
         {\"type\":\"system.player_joined\",\"source\":{\"kind\":\"system\"},\"payload\":{\"playerId\":\"p1\"}}\n",
    );
    for i in 0..LINES {
        text.push_str(&format!(
            "{{\"type\":\"counter.add\",\"source\":{{\"kind\":\"player\",\"playerId\":\"p1\"}},\"payload\":{{\"entityId\":\"c{:03}\",\"amount\":1}}}}\n",
            i % 200
        ));
    }
    text.into_bytes()
}

fn bench(c: &mut Criterion) {
    let game = table();
    let lines = input();
    let mut group = c.benchmark_group("cli path");
    group.throughput(Throughput::Elements(LINES));
    group.bench_function(
        "counter.add lines in, event lines out [200 entities]",
        |b| {
            let mut out: Vec<u8> = Vec::with_capacity(lines.len() * 2);
            b.iter(|| {
                let state = state_from_game(&game, 1).expect("bench table");
                let mut room = Room::new(state, None);
                out.clear();
                room.run_lines(&lines[..], |_, _, _| Ok(()), &mut out)
                    .expect("in-memory run");
                out.len()
            })
        },
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
