//! The Kafka tests' shared tools live in the test kit (`kledger_testkit::kafka`), where the
//! reliability harness uses them too.

#![allow(unused_imports)]

pub(crate) use kledger_testkit::kafka::*;
