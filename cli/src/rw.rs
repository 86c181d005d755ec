//! `tenure lock NAME --shared` and `--exclusive`: a command run as a reader or as the writer of
//! the read-write lock NAME.

use crate::hold::{Lease, Timing};
use crate::run::{coordination, held, run_held, usage};
use crate::{Failure, LockArgs, say};

pub(crate) async fn lock(backend: Option<&str>, args: LockArgs) -> Result<i32, Failure> {
    let (store, coordination) = coordination(backend).await?;
    let mut builder = coordination.read_write_lock(&args.name).map_err(|e| usage(&e))?;
    if let Some(lease) = args.lease {
        builder = builder.lease_duration(lease);
    }
    if let Some(purpose) = crate::run::purpose_of(args.purpose.as_deref(), &args.command) {
        builder = builder.purpose(&purpose);
    }
    let lock = builder.env_load(false).build().map_err(|e| usage(&e))?;
    let timing = Timing::for_lease(lock.config().lease_duration());
    if args.shared {
        let guard = held(&store, &args, "read-write lock", acquire!(lock.read(), args)).await?;
        say!("acquired read-write lock {} to read (generation {})", args.name, guard.fence());
        run_held(&store, guard, &args.name, &args.command, timing, args.on_lost.as_deref()).await
    } else {
        let guard = held(&store, &args, "read-write lock", acquire!(lock.write(), args)).await?;
        let poisoned = if guard.poisoned() { "; the writer before it never released" } else { "" };
        say!("acquired read-write lock {} to write (fencing token {}{poisoned})", args.name, guard.fence());
        run_held(&store, guard, &args.name, &args.command, timing, args.on_lost.as_deref()).await
    }
}
