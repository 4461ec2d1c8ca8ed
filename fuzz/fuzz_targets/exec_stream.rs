#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| selfprobe_fuzz::exec_stream(data));
