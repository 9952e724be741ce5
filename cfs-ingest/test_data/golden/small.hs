-- | Inventory bookkeeping for a small shop.
module Shop.Inventory
  ( Item(..)
  , Sku
  , Stock
  , Priced(..)
  , restock
  , describe
  ) where

import qualified Data.Map.Strict as Map
import Data.List (sortOn)

-- | Stock-keeping unit code.
newtype Sku = Sku String
  deriving (Eq, Ord, Show)

-- | A product on the shelf.
data Item = Item
  { itemSku   :: Sku     -- ^ unique code
  , itemName  :: String  -- ^ display name
  , itemCount :: Int
  } deriving (Show)

-- | Items indexed by their code.
type Stock = Map.Map Sku Item

data Size = Small | Medium | Large

-- | Things that have a price in cents.
class Priced a where
  price :: a -> Int
  -- | Price with tax, 20% by default.
  gross :: a -> Int
  gross x = price x * 120 `div` 100

instance Priced Item where
  price i = itemCount i * 100

-- | Add units of an item to the stock.
restock :: Int -> Item -> Stock -> Stock
restock n item = Map.insertWith merge (itemSku item) item
  where
    merge _new old = old { itemCount = itemCount old + n }

-- | Human readable label.
describe :: Size -> String
describe Small  = "S"
describe Medium = "M"
describe Large  = "L"

-- local helper, not exported
sorted :: Stock -> [Item]
sorted = sortOn itemName . Map.elems
