#include <string>

namespace shapes {

namespace {
int next_id() { static int id = 0; return ++id; }
}  // namespace

// A shape with an area.
class Shape {
 public:
  explicit Shape(std::string name);
  virtual ~Shape();
  virtual double Area() const = 0;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  int id_ GUARDED_BY(mu_);
};

template <typename T>
T Clamp(T value, T lo, T hi) {
  return value < lo ? lo : (value > hi ? hi : value);
}

Shape::Shape(std::string name) : name_(std::move(name)), id_(next_id()) {}

Shape::~Shape() = default;

using ShapeList = std::vector<Shape*>;

enum class Unit { kMeter, kFoot };

struct Circle final : Shape {
  double radius;
  double Area() const override { return 3.14159 * radius * radius; }
};

}  // namespace shapes
