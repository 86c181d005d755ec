//! `tenure lock NAME --permits N`: a command run under one of the N permits of the semaphore
//! NAME.

use crate::hold::{Lease, Timing};
use crate::run::{coordination, held, run_held, usage};
use crate::{Failure, LockArgs, say};

pub(crate) async fn lock(backend: Option<&str>, args: LockArgs, permits: u32) -> Result<i32, Failure> {
    let (store, coordination) = coordination(backend).await?;
    let mut builder = coordination.semaphore(&args.name, permits).map_err(|e| usage(&e))?;
    if let Some(lease) = args.lease {
        builder = builder.lease_duration(lease);
    }
    if let Some(purpose) = crate::run::purpose_of(args.purpose.as_deref(), &args.command) {
        builder = builder.purpose(&purpose);
    }
    let semaphore = builder.env_load(false).build().map_err(|e| usage(&e))?;
    let timing = Timing::for_lease(semaphore.config().lease_duration());
    let guard = held(&store, &args, "semaphore", acquire!(semaphore, args)).await?;
    say!("acquired one of {permits} permits of semaphore {} (fencing token {})", args.name, guard.fence());
    run_held(&store, guard, &args.name, &args.command, timing, args.on_lost.as_deref()).await
}
