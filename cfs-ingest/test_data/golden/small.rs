//! A small module.

use std::fmt;

/// A point.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub x: i32,
    pub y: i32,
}

/// Shapes.
pub enum Shape {
    Circle(i32),
    Square(i32),
}

pub const ORIGIN: Point = Point { x: 0, y: 0 };

impl Point {
    /// Distance squared.
    pub fn norm2(&self) -> i32 {
        self.x * self.x + self.y * self.y
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}

pub trait Area {
    fn area(&self) -> i32;
}

mod inner {
    pub fn helper() {}
}

macro_rules! square {
    ($x:expr) => {
        $x * $x
    };
}

type Pair = (Point, Point);
