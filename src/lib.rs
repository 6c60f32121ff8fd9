//! parprims facade
pub use compact;
pub use gpu_core;
pub use linalg;
pub use scan;
