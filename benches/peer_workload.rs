//! The peer workload at N = 100,000 moves per workload, kernel-only and
//! scripted. The table and the action list are built outside the timed
//! region; one iteration processes the whole stream.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

#[path = "peer/driver.rs"]
mod driver;

use driver::{action, moves, room, Variant, Workload};

const N: usize = 100_000;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("peer");
    group.sample_size(10);
    group.throughput(Throughput::Elements(N as u64));
    for w in Workload::ALL {
        let actions: Vec<_> = moves(w, N).into_iter().map(action).collect();
        for (label, variant) in [
            ("kernel-only", Variant::KernelOnly),
            ("scripted", Variant::Scripted),
        ] {
            group.bench_function(format!("{} {label}", w.name()), |b| {
                b.iter_batched(
                    || room(variant, 1),
                    |(mut k, mut host)| {
                        for a in &actions {
                            std::hint::black_box(k.process(a, host.as_mut()));
                        }
                        k
                    },
                    BatchSize::PerIteration,
                );
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
