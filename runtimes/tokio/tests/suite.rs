//! The behaviour suite on tokio (multi-thread runtime, two workers).

fn block_on<F: std::future::Future<Output = ()>>(test: F) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    runtime.expect("a tokio runtime").block_on(test);
}

tenure_suite::suite!(tenure_tokio::Tokio::current(), block_on);
