//! The costs that grow with the table: `run --record` per action (a record
//! line with the state hash and the changed digest entries) at 200, 10,000
//! and 100,000 entities, against the same action unrecorded; and starting a
//! 100,000-entity game (load and state hash). Figures and bars are in
//! docs/performance.md.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use digipology_kernel::state_from_game;
use digipology_room::room::Room;
use serde_json::json;

fn table(n: usize) -> serde_json::Value {
    let entities: Vec<_> = (0..n)
        .map(|i| {
            json!({"id": format!("e{i:06}"), "components": {
                "counter": {"value": i % 7},
                "transform": {"position": {"x": i % 300, "y": 0, "z": i / 300}}
            }})
        })
        .collect();
    json!({"seats": ["a"], "entities": entities})
}

const ADD: &str = r#"{"type":"counter.add","source":{"kind":"script","scriptId":"main","bindingId":"global"},"payload":{"entityId":"e000001","amount":1}}"#;

fn room(game: &serde_json::Value, record: bool) -> Room {
    let mut room = Room::new(state_from_game(game, 1).expect("bench table"), None);
    if record {
        room.record_to(Box::new(std::io::sink()), json!({}))
            .expect("record to a sink");
    }
    let mut sink = std::io::sink();
    room.start(&mut sink).expect("start");
    room
}

fn record(c: &mut Criterion) {
    let mut group = c.benchmark_group("record");
    group.throughput(Throughput::Elements(1));
    group.sample_size(10);
    let line = digipology_room::jsonl::Line::Bytes(ADD.as_bytes().to_vec());
    for n in [200usize, 10_000, 100_000] {
        let game = table(n);
        for recorded in [false, true] {
            let mut r = room(&game, recorded);
            let name = if recorded { "recorded" } else { "unrecorded" };
            let mut sink = std::io::sink();
            // The action must be accepted (a rejection changes nothing, and
            // would measure no digest work at all).
            let mut events = Vec::new();
            r.submit_line(&line, &mut events).expect("runs");
            let text = String::from_utf8_lossy(&events);
            assert!(text.contains("counter.changed"), "not accepted: {text}");
            group.bench_function(BenchmarkId::new(format!("counter.add {name}"), n), |b| {
                b.iter(|| r.submit_line(&line, &mut sink).expect("runs"))
            });
        }
    }
    group.finish();
}

fn load(c: &mut Criterion) {
    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    let game = table(100_000);
    let text = game.to_string();
    group.bench_function("100,000-entity game.json: parse whole, load, hash", |b| {
        b.iter(|| {
            let game: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            let state = state_from_game(&game, 1).expect("loads");
            state.hash()
        })
    });
    // As `digipology run` loads: the entities stay text, read one at a time.
    let entities = game["entities"].to_string();
    let top = json!({"seats": ["a"]});
    group.bench_function(
        "100,000-entity game.json: entities streamed, load, hash",
        |b| {
            b.iter(|| {
                let state =
                    digipology_kernel::state_from_game_streamed(&top, &entities, 1).expect("loads");
                state.hash()
            })
        },
    );
    group.finish();
}

criterion_group!(benches, record, load);
criterion_main!(benches);
