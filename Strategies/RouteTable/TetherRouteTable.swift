// TetherRouteTable
