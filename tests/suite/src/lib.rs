//! The behaviour suite of Tenure (spec §8 for Lock, ReadWriteLock, Semaphore, TaskLock, LeaderElection,
//! Coordination and configuration), written once, generic over [`tenure::Runtime`], and instantiated for each runtime by
//! [`suite!`] in that runtime crate's tests.
//!
//! Leases are tens of milliseconds; nothing sleeps to let something happen: tests wait on
//! conditions (with a generous cap that only a failure reaches).
#![allow(clippy::unwrap_used, clippy::missing_panics_doc, missing_docs, unreachable_pub)]

pub mod bench;
pub mod binding;
pub mod blocking;
pub mod config;
pub mod coordination;
pub mod election;
pub mod holder;
pub mod keep_alive;
pub mod lock;
pub mod rw;
pub mod sem;
pub mod support;
pub mod task_lock;
pub mod telemetry;

pub use tenure;

/// Expands to one `#[test]` per behaviour, each running on `$runtime` (an expression building
/// the runtime inside the executor) with `$block_on` (a function running a future to completion).
#[macro_export]
macro_rules! suite {
    ($runtime:expr, $block_on:expr) => {
        $crate::suite!(@tests $runtime, $block_on;
            lock::lock_key_is_prefixed_and_the_raw_name_stays_free,
            holder::lock_state_names_the_holder_and_its_purpose,
            holder::task_lock_state_names_the_run,
            holder::shared_holders_name_themselves_and_their_purpose,
            lock::lock_acquire_release_and_handle,
            lock::lock_owned_only_for_the_holder,
            lock::lock_nowait_would_block_when_held,
            lock::lock_waiter_takes_over_after_expiry_with_a_greater_fence,
            lock::lock_fence_climbs_across_release,
            lock::lock_release_of_an_expired_lock_is_not_owned,
            lock::lock_nested_acquire_on_a_holder_is_reentrant,
            lock::lock_timeout_is_a_lock_timeout_error,
            lock::lock_timeout_succeeds_when_the_blocker_expires_first,
            lock::lock_extend_keeps_the_fence_and_a_lost_lease_is_not_owned,
            lock::lock_backend_failures_map_to_operation_errors,
            lock::lock_frozen_backend_fails_within_backend_timeout,
            lock::lock_dropped_guard_releases,
            lock::lock_lost_completes_when_the_lease_runs_out,
            lock::lock_dropped_acquire_leaves_nothing_held,
            lock::lock_release_wakes_a_waiter_at_once,
            lock::lock_reconfigure_applies_to_the_next_acquire_and_keeps_the_worker,
            lock::lock_contenders_never_overlap,
            lock::lock_cancelled_acquire_releases_a_grant_that_lands_late,
            lock::lock_retry_after_a_backend_timeout_is_not_disturbed_by_the_late_answer,
            lock::lock_second_acquire_on_the_same_lock_waits_instead_of_nesting,
            lock::lock_dropping_a_guard_stops_belief_at_once,
            lock::lock_every_acquisition_takes_a_fresh_token,
            lock::lock_a_fence_below_one_its_holders_saw_is_refused_whichever_holder_asks,
            keep_alive::keep_alive_holds_a_lock_three_leases_with_one_fence,
            keep_alive::keep_alive_loses_a_frozen_lease_before_another_holder_can_take_it,
            keep_alive::keep_alive_retries_a_failed_renewal_while_the_lease_is_valid,
            keep_alive::keep_alive_warns_once_per_run_of_failed_renewals_before_the_loss,
            keep_alive::keep_alive_warns_while_a_renewal_hangs,
            keep_alive::keep_alive_refuses_a_warning_threshold_outside_the_lease,
            keep_alive::keep_alive_a_revoked_task_run_says_so_and_never_changes_its_answer,
            keep_alive::keep_alive_releases_at_the_maximum_hold,
            keep_alive::keep_alive_dropped_stops_renewing_and_releases,
            keep_alive::keep_alive_keeps_a_task_lock_run_past_its_lease,
            keep_alive::keep_alive_a_renewal_confirmed_after_the_validity_does_not_revive_it,
            keep_alive::keep_alive_told_it_holds_no_more_after_its_validity_ran_out_ends_as_unreachable,
            keep_alive::keep_alive_a_lease_taken_by_another_holder_says_so_the_moment_it_is_lost,
            keep_alive::keep_alive_holds_and_ends_a_lease_on_a_sqlite_file,
            task_lock::task_lock_key_is_prefixed_and_separate_from_lock,
            task_lock::task_lock_nested_enter_is_reentrant,
            task_lock::task_lock_exit_after_min_hold_releases,
            task_lock::task_lock_exit_before_min_hold_keeps_the_key_until_then,
            task_lock::task_lock_body_longer_than_lease_is_not_owned,
            task_lock::task_lock_backend_failures_map_to_errors,
            task_lock::task_lock_extend_keeps_it_held,
            task_lock::task_lock_run_skips_when_held_elsewhere,
            task_lock::task_lock_dropped_guard_exits,
            task_lock::task_lock_enter_after_a_backend_timeout_and_its_late_answer,
            task_lock::task_lock_reconfigure_swaps_keeps_the_worker_and_applies_to_the_next_enter,
            task_lock::task_lock_enter_right_after_a_dropped_guard,
            election::election_single_worker_leads_with_its_record,
            election::election_changes_tell_every_term_in_order,
            election::election_confirmation_age_and_freshness,
            election::election_lifecycle_and_stop_clears_at_once,
            election::election_four_workers_one_leader_and_hand_over,
            election::election_backend_failure_loses_leadership_after_renew_deadline,
            election::election_guard_refuses_followers,
            election::election_lead_returns_result_and_cancels_on_loss,
            election::election_lead_repeat_runs_again_after_reelection,
            election::election_reconfigure_keeps_the_worker,
            election::election_dropping_every_handle_stops_and_releases,
            election::election_start_stop_cycles_leave_nothing_behind,
            election::election_attempts_slower_than_backend_timeout_never_elect,
            election::election_stop_with_a_frozen_store_is_bounded,
            coordination::coordination_binds_each_slot,
            coordination::coordination_missing_slots_and_backends_are_errors,
            coordination::coordination_registry_resolves_default_and_named,
            config::config_builder_environment_and_defaults,
            config::config_invalid_names_and_settings_are_refused,
            config::config_from_config_reads_no_environment,
            blocking::blocking_lock_from_a_plain_thread,
            blocking::blocking_holder_has_thread_semantics,
            blocking::blocking_task_lock_from_a_plain_thread,
            blocking::blocking_call_on_a_runtime_thread_is_refused_or_undetectable,
            blocking::blocking_nested_acquire_on_a_thread_is_reentrant_and_a_lost_extend_not_owned,
            rw::rw_readers_share_and_a_waiting_writer_holds_new_readers_out,
            rw::rw_a_nowait_writer_keeps_no_intent_and_a_timed_out_one_withdraws_it,
            rw::rw_generations_grow_per_write_and_an_extend_keeps_the_fence,
            rw::rw_an_expired_writer_poisons_the_next_grant,
            rw::rw_downgrade_keeps_writers_out_and_reads_the_write,
            rw::rw_one_callers_holders_refuse_an_upgrade_and_a_second_lease,
            rw::rw_a_callers_lost_guard_keeps_its_side_until_released,
            rw::rw_a_downgrade_or_extend_without_the_lease_is_not_owned,
            rw::rw_a_release_wakes_a_waiting_writer_at_once,
            rw::rw_a_kept_write_lease_outlives_its_lease_with_one_fence,
            rw::rw_names_and_settings_come_from_their_own_variables,
            sem::sem_admits_up_to_its_permits_each_with_a_greater_fencing_token,
            sem::sem_waiters_are_served_in_arrival_order,
            sem::sem_another_permit_count_is_refused_while_the_name_is_in_use,
            sem::sem_an_expired_permit_frees_its_place_and_a_kept_one_does_not,
            sem::sem_names_counts_and_settings_are_checked,
            binding::binding_slot_release_beats_the_loss_its_stop_shows,
            binding::binding_slot_loss_at_the_maximum_hold_is_a_lost_error_with_its_cause,
            binding::binding_slot_refuses_a_warning_threshold_and_keeps_the_guard_as_it_was,
            binding::binding_slot_tells_its_loop_a_warning_given_while_the_callback_ran,
            binding::binding_slot_refuses_a_downgrade_while_kept_and_downgrades_otherwise,
            binding::binding_options_apply_to_every_builder_and_name_a_bad_setting_as_spelt,
            telemetry::telemetry_a_lock_cycle_is_measured_and_its_spans_carry_no_token,
            telemetry::telemetry_a_contended_acquire_counts_its_wait_timeout_and_refusal,
            telemetry::telemetry_a_dropped_acquire_is_cancelled_and_leaves_no_waiter,
            telemetry::telemetry_a_lease_lost_while_renewals_fail_warns_then_counts_the_store_unreachable,
            telemetry::telemetry_a_lease_taken_by_another_holder_is_a_loss_by_taking,
            telemetry::telemetry_a_task_lock_run_is_measured_as_one,
            telemetry::telemetry_an_election_reports_its_leader_and_each_change,
        );
    };
    (@tests $runtime:expr, $block_on:expr; $($module:ident :: $test:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                ($block_on)(async { $crate::$module::$test($runtime).await });
            }
        )*
    };
}
