// ESM entry: the same objects as the CommonJS one.
import tenure from './index.js';

export default tenure;
export const {
  openBackend,
  memoryBackend,
  Lock,
  LockHandle,
  LeaderElection,
  Backend,
  TenureError,
  StoreError,
  SettingsValidationError,
  OutOfContextError,
  BackendNotOpenError,
  CoordinationError,
  CoordinationBackendError,
  LockReentrantError,
  LockUpgradeError,
  LockBusyError,
  LockBackendError,
  LockAcquireError,
  LockExtendError,
  LockReleaseError,
  LockLockedCheckError,
  LockOwnedCheckError,
  LockNotOwnedError,
  LockLostError,
  AdmissionError,
  WouldBlockError,
  LockTimeoutError,
} = tenure;
