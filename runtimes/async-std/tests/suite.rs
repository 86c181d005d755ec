//! The behaviour suite on async-std.

tenure_suite::suite!(tenure_async_std::AsyncStd, async_std::task::block_on);
