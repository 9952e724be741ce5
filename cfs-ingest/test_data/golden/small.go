// Package geo has shapes.
package geo

import (
	"fmt"
	"math"
)

// Pi is a constant.
const Pi = 3.14159

var count int

// Point is a point.
type Point struct {
	X, Y float64
}

// Shape has an area.
type Shape interface {
	Area() float64
}

// Norm returns the length.
func (p *Point) Norm() float64 {
	return math.Sqrt(p.X*p.X + p.Y*p.Y)
}

func (l List[T]) Len() int { return len(l) }

type List[T any] []T

// Describe prints a point.
func Describe(p Point) {
	fmt.Println(p)
}
