//! The whole path a line takes through `digipology run`, in process: the
//! line read from the input, parsed into its envelope, processed by the
//! kernel, and its events written as JSON lines. One iteration runs 10,000
//! `counter.add` lines over a 200-counter table into an in-memory sink
//! (the file system is left out; `docs/performance.md` also times the
//! command itself on a 1,000,000-line file) — and the same with the
//! replayable record written too (`run --record`), into memory.

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

/// An in-memory record file (the room owns its record writer).
#[derive(Default)]
struct MemoryFile(Vec<u8>);

impl std::io::Write for MemoryFile {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn bench(c: &mut Criterion) {
    let game = table();
    let lines = input();
    let mut group = c.benchmark_group("cli path");
    group.throughput(Throughput::Elements(LINES));
    for recorded in [false, true] {
        let name = if recorded {
            "counter.add lines in, event lines and record lines out [200 entities]"
        } else {
            "counter.add lines in, event lines out [200 entities]"
        };
        group.bench_function(name, |b| {
            let mut out: Vec<u8> = Vec::with_capacity(lines.len() * 2);
            b.iter(|| {
                let state = state_from_game(&game, 1).expect("bench table");
                let mut room = Room::new(state, None);
                if recorded {
                    let record = MemoryFile::default();
                    room.record_to(Box::new(record), json!({}))
                        .expect("record header");
                }
                out.clear();
                room.run_lines(&lines[..], |_, _, _| Ok(()), &mut out)
                    .expect("in-memory run");
                out.len()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
