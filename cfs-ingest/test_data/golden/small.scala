// Sample Scala file for symbol chunking.
package com.example.shop

import scala.collection.mutable

/** Maximum number of items in a cart. */
final val MaxItems = 50

type Price = BigDecimal

/** Computes a discounted price. */
def discount(p: Price, pct: Int): Price = p * (100 - pct) / 100

/** Something that has a name. */
trait Named {
  def name: String
  def greet(): String = s"Hello, $name"
}

/** A product in the catalogue. */
case class Product(id: Long, name: String, price: Price) extends Named

enum Color:
  case Red, Green
  case Custom(rgb: Int)

/** A shopping cart holding products. */
class Cart(owner: String) {
  private var items = mutable.ListBuffer.empty[Product]
  val createdAt: Long = System.currentTimeMillis()

  // Add one product to the cart.
  def add(p: Product): Unit = items += p

  def total: Price = items.map(_.price).sum

  object Stats {
    def count: Int = items.size
  }
}

object Cart {
  final val Empty = "empty"
  implicit val ordering: Ordering[Product] = Ordering.by(_.id)
  given defaultColor: Color = Color.Red
}

extension (p: Product)
  def label: String = s"${p.name} (${p.price})"

package inner {
  object Helper {
    def twice(x: Int): Int = x * 2
  }
}
