//! Kernel throughput: counter.add, entity.flip and a rejected action, each at
//! 100 and 100,000 entities. The table is built outside the timed region;
//! each iteration processes one pre-built action against a live kernel
//! (commit included), cycling over 1,024 entities spread across the table so
//! the large table is not served from one hot cache line.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use digipology_kernel::{state_from_game, Action, Kernel, NoScripts, Source};
use serde_json::json;

fn table(entities: usize) -> Kernel {
    let list: Vec<_> = (0..entities)
        .map(|i| {
            json!({"id": format!("e{i:06}"), "components": {"counter": {"value": 0}, "flippable": {}}})
        })
        .collect();
    let game = json!({"seats": ["a"], "entities": list});
    let mut k = Kernel::new(state_from_game(&game, 1).expect("bench table loads"));
    for line in [
        r#"{"type":"system.game_start","source":{"kind":"system"},"payload":{}}"#,
        r#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"p1"}}"#,
    ] {
        assert!(k.process_line(line, &mut NoScripts).accepted());
    }
    k
}

fn actions(entities: usize, make: impl Fn(&str) -> Action) -> Vec<Action> {
    let step = (entities / 1024).max(1);
    (0..entities.min(1024))
        .map(|i| make(&format!("e{:06}", i * step)))
        .collect()
}

fn p1() -> Source {
    Source::Player {
        player_id: "p1".into(),
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("kernel");
    group.throughput(Throughput::Elements(1));
    type Maker = fn(&str) -> Action;
    let cases: [(&str, Maker, bool); 3] = [
        (
            "counter.add",
            |id| Action::new("counter.add", p1(), json!({"entityId": id, "amount": 1})),
            true,
        ),
        (
            "entity.flip",
            |id| Action::new("entity.flip", p1(), json!({"entityId": id})),
            true,
        ),
        (
            "rejected (button.press on a counter)",
            |id| Action::new("button.press", p1(), json!({"entityId": id})),
            false,
        ),
    ];
    for (name, make, accepted) in cases {
        for (label, n) in [("100", 100usize), ("100k", 100_000)] {
            let mut k = table(n);
            let list = actions(n, make);
            assert_eq!(k.process(&list[0], &mut NoScripts).accepted(), accepted);
            let mut i = 0usize;
            group.bench_function(BenchmarkId::new(name, format!("{label} entities")), |b| {
                b.iter(|| {
                    i = (i + 1) % list.len();
                    k.process(&list[i], &mut NoScripts)
                });
            });
        }
    }
    let mut k = table(100);
    let line = r#"{"type":"counter.add","source":{"kind":"player","playerId":"p1"},"payload":{"entityId":"e000042","amount":1}}"#;
    group.bench_function("counter.add from a JSON line [100 entities]", |b| {
        b.iter(|| k.process_line(line, &mut NoScripts));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
