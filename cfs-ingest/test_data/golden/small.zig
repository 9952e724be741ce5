//! Ring buffer utilities used by the scheduler.
//! Kept deliberately tiny.
const std = @import("std");

/// Default number of slots.
pub const default_capacity = 16;
var global_counter: u32 = 0;

comptime { std.debug.assert(default_capacity > 0); }

/// Priority of a queued job.
pub const Priority = enum(u8) {
    low,
    high,
    pub fn isUrgent(self: Priority) bool {
        return self == .high;
    }
};

pub const Event = union(enum) {
    tick: u64,
    message: []const u8,
    quit,
};

/// Fixed-size FIFO of jobs.
pub const Ring = struct {
    /// Backing storage.
    items: [default_capacity]u32 = undefined,
    head: usize = 0,

    const Self = @This();
    pub const Error = error{Full};

    /// Push a value, failing when full.
    pub fn push(self: *Self, value: u32) Error!void {
        if (self.head >= default_capacity) return error.Full;
        self.items[self.head] = value;
        self.head += 1;
    }
};

fn square(comptime T: type, x: T) T {
    return x * x;
}
test "ring push fills up" {
    var r = Ring{};
    try r.push(@as(u32, square(u32, 3)));
    try std.testing.expect(r.head == 1);
}
