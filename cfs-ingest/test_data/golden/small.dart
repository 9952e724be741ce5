/// Probe library for shapes.
library shapes;
import 'dart:math' as math;

/// Maximum number of sides.
const int maxSides = 12;
final String label = 'shapes';
typedef Measure = double Function(Shape s);
/// Adds two numbers.
int add(int a, int b) => a + b;

abstract class Shape {
  double area();
}

// a plain comment
class Circle extends Shape with Named {
  final double radius;
  static int count = 0;

  Circle(this.radius);
  Circle.unit() : radius = 1.0;
  factory Circle.fromDiameter(double d) {
    return Circle(d / 2);
  }

  /// Area of the circle.
  @override
  double area() {
    return math.pi * radius * radius;
  }

  double get diameter => radius * 2;
  set diameter(double v) {}
  static Circle zero() => Circle(0);
}

mixin Named {
  String get name => 'shape';
}

extension Doubled on Circle {
  Circle doubled() => Circle(radius * 2);
}

enum Color {
  red, green;
  bool get isRed => this == Color.red;
}
