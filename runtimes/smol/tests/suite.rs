//! The behaviour suite on smol (background tasks on smol's global executor).

tenure_suite::suite!(tenure_smol::Smol::global(), smol::block_on);
