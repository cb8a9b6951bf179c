//! Check a rules file against the devices of this machine.
